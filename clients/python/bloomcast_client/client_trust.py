"""What a Client given the publisher's key does to verify what it reads (PROTOCOL.md
section 11): the key list walked from that key (bloomcast_client.trust), each hour
checked by its chain link and signature (from its headers, or on a static mirror from
its chain entry), derived forms by their own signatures (or `.sig` sidecars), versions
of the open hour by their signature and freshness, and the checkpoint that tells a stale
or withholding source from a quiet publisher (bloomcast_client.coverage).

A mixin of Client, kept apart so that the client's reading and its trust can each be
read on their own; it uses the client's requests, caches and index."""

import datetime
import json

from . import (HOUR_PATH, HTTPError, Unsigned, VerificationError, Verification, coverage,
               hour_path, parse_hour)


class Verifying:
    """Client's verification (see the module docstring)."""

    def _open_too_old(self, path):
        """Whether the version of an open hour held was verified with a `made` past the
        freshness bound: revalidating it would keep that signature (a 304 carries
        none), so it is fetched whole, with the newest signature."""
        made = self.open_made.get(path)
        return made is not None and coverage.clock() - made > self.freshness

    def _verify_hour(self, path, doc, f, resp_headers):
        """Verifies an hour's filter `f` (of `doc`, served with `resp_headers`) as the
        hour at `path` asked for: a sealed one by its chain link and signature (from its
        headers, else from its chain entry: a static mirror sends none), an open one by
        its Bloom-Open-Signature and freshness (unsigned: listed unverified)."""
        from .verify import rfc3339 as name_of
        hour = parse_hour(HOUR_PATH.match(path).group(1))
        self._read_keys()
        if doc["complete"]:
            prev = resp_headers.get("Bloom-Prev-Header")
            signature = resp_headers.get("Bloom-Signature")
            if prev is None and signature is None:
                # A static mirror (PROTOCOL.md section 13) sends no per-hour headers: a
                # chain page verified before, or the hour's chain entry, carries its
                # link, signature and key id.
                if self.verifier.check_known(hour, f.data, doc.get("digest")):
                    return
                entry = self._chain_entry(hour_path(hour))
                prev, signature = entry.get("prev"), entry.get("signature")
                if signature is not None and entry.get("key_id"):
                    signature = f'{signature}; keyid="{entry["key_id"]}"'
            self.verifier.check(hour, f.data, prev, signature, doc.get("digest"))
            return
        if self.current is not None and hour < self.current:
            raise VerificationError(
                f"hour {name_of(hour)}: served as open (complete: false), but the source's "
                f"current hour is {name_of(self.current)}: a sealed hour is signed as "
                "sealed, and an open version cannot stand for it")
        try:
            self.open_made[path] = self.verifier.check_open(
                hour, f.data, resp_headers.get("Bloom-Open-Signature"), coverage.clock(),
                self.freshness)
            self.unverified.pop(name_of(hour), None)
        except Unsigned as e:
            self.open_made.pop(path, None)
            self.unverified[name_of(hour)] = str(e)

    def _chain_entry(self, path):
        """The chain entry of the hour at `path` (`/chain/...?limit=1`), or {}."""
        try:
            page = json.loads(self._request(f"/chain{path}?limit=1",
                                            {"Accept-Encoding": "gzip"})[2])
        except HTTPError as e:
            if e.status == 404:
                return {}
            raise
        if page and page[0].get("hour") and parse_hour(page[0]["hour"]) == parse_hour(path):
            return page[0]
        return {}

    def _chain_page(self, path, limit):
        """The chain page starting at the hour at `path` (at most `limit` entries; a
        static mirror's has one), [] when there is none (404)."""
        try:
            return json.loads(self._request(f"/chain{path}?limit={limit}",
                                            {"Accept-Encoding": "gzip"})[2])
        except HTTPError as e:
            if e.status == 404:
                return []
            raise

    def _form_signature(self, url, headers):
        """A derived form's Bloom-Signature: the response's, else the one line of its
        `.sig` sidecar (a static mirror, PROTOCOL.md section 13); None when neither."""
        if headers.get("Bloom-Signature"):
            return headers["Bloom-Signature"]
        try:
            _, _, body = self._request(url.split("?", 1)[0] + ".sig")
        except HTTPError as e:
            if e.status == 404:
                return None
            raise
        lines = body.decode("utf-8", "replace").strip().splitlines()
        return lines[0].strip() if lines else None

    def check_form(self, form, path, url, headers, body, label=None):
        """Verifies a derived `form` of the sealed hour at `path` ("exact", "ribbon",
        "ribbon2"; `body` its binary body) fetched from `url` with `headers`, under the
        hour's verified chain header. Unsigned when it carries no signature."""
        from .verify import FORM_LABELS
        self._read_keys()
        hour = parse_hour(path)
        signature = self._form_signature(url, headers)
        if not signature:
            raise Unsigned(f"hour {hour.strftime('%Y-%m-%dT%H:00:00Z')}: "
                           f"{label or FORM_LABELS[form]} carries no signature (no "
                           "Bloom-Signature, no .sig sidecar): unverified")
        self.verifier.check_form(form, hour, body, self._hour_header(path, hour),
                                 headers.get("Bloom-Prev-Header"), signature, label)

    def _hour_header(self, path, hour):
        """header(h) of a sealed hour, verified: from the v1 hour or a chain page
        verified before, else from the chain page starting at it (on a server, while
        changed_since reads a range, the hours after it up to the range's end too: one
        request for the range), else by verifying the v1 hour."""
        from .verify import hour_index
        index = hour_index(hour)
        if index not in self.verifier.headers:
            until = self._reading_until
            ahead = int((until - hour).total_seconds() // 3600) if until else 1
            page = self._chain_page(path, min(max(ahead, 1), 1000))
            if page and page[0].get("hour") and parse_hour(page[0]["hour"]) == hour:
                self.verifier.check_chain(page)
        if index not in self.verifier.headers:
            self.document(path)
        return self.verifier.headers[index][1]

    def _staleness(self, newest, sealed=None):
        """Why this source, whose index's current hour is `newest` (served `sealed`, or
        open; None: as a static mirror's are, or a server's are not), is not shown
        current (bloomcast_client.coverage): its newest hour past the lag bound; with a
        key, a checkpoint newer than its hours or too old, or none where no verified
        version of the open hour shows it current."""
        if sealed is None:
            sealed = self.static
        now = coverage.clock()
        reasons = []
        lagging = coverage.lag_reason(self.base, newest, self.static, now, self.lag_hours)
        if lagging:
            reasons.append(lagging)
        if self.verifier:
            checkpoint = self.checkpoint()
            if checkpoint is not None:
                through = newest if sealed else newest - coverage.HOUR
                reasons += coverage.checkpoint_reasons(self.base, checkpoint, through, now,
                                                       self.lag_hours)
            elif self.static or not any(p in self.open_made for p in (
                    hour_path(newest), hour_path(newest) + ".bin")):
                reasons.append(coverage.no_checkpoint_reason(self.base, newest,
                                                             self.static))
        return reasons

    def checkpoint(self):
        """The publisher's checkpoint as this source serves it, verified (PROTOCOL.md
        section 11): (hour, made), or None when it serves none (404). Read at its
        index's `urls.checkpoint` (a server's `/checkpoint`, a static mirror's
        `/checkpoint.json`)."""
        if self.current is None:
            self.index()
        path = self.urls.get("checkpoint")
        if not isinstance(path, str) or not path.startswith("/"):
            path = "/checkpoint.json" if self.static else "/checkpoint"
        try:
            body = self._request(path, {"Accept-Encoding": "gzip"})[2]
        except HTTPError as e:
            if e.status == 404:
                return None
            raise
        self._read_keys()
        try:
            doc = json.loads(body)
        except ValueError:
            raise VerificationError(f"the checkpoint at {path} is not JSON") from None
        hour, made, _ = self.verifier.check_checkpoint(doc)
        return hour, made

    def verify_chain(self, since):
        """Verifies the chain from `since` to the newest sealed hour (page by page), then
        every listed hour's filter against it. Returns the hours verified."""
        if not self.verifier:
            raise ValueError("verifying needs the publisher's public key (--pubkey)")
        from .verify import VerificationError, digest
        self._read_keys()
        entries, path = [], f"/chain{hour_path(since)}?limit=1000"
        while path:
            try:
                status, headers, body = self._request(path, {"Accept-Encoding": "gzip"})
            except HTTPError as e:
                if e.status == 404 and entries:
                    break
                raise
            page = json.loads(body)
            entries.extend(page)
            link = headers.get("Link") or ""
            if 'rel="next"' in link:
                path = link.split("<", 1)[1].split(">", 1)[0]
            elif page:
                # No Link (a static mirror's one-entry pages, PROTOCOL.md section 13): the
                # page after the last entry, until one is empty or absent.
                after = parse_hour(page[-1]["hour"]) + datetime.timedelta(hours=1)
                path = f"/chain{hour_path(after)}?limit=1000"
            else:
                path = None
        digests = self.verifier.check_chain(entries)
        self._chain_digests = digests
        for hour, want in digests.items():
            got = digest(self.filter(hour_path(hour)).data)
            if got != want:
                raise VerificationError(f"hour {hour.strftime('%Y-%m-%dT%H:00:00Z')}: the "
                                        "filter's digest is not the chain's: the bytes were "
                                        "altered")
        return list(digests)

    def verify(self, since):
        """Verifies the source from `since` on (bloomcast `verify`): the chain and every
        listed hour's filter (verify_chain); on a static mirror, every file of each hour
        too (bloomcast_client.mirror_check); and the publisher's checkpoint. Returns
        Verification(hours, unverified, stale): the hours verified, the files that could
        not be (lines), why the source is not shown current."""
        from .mirror_check import check_hour
        index = self.index()
        hours = self.verify_chain(since)
        unverified = []
        if self.static:
            for hour in hours:
                unverified += check_hour(self, hour, self._chain_digests[hour])
        newest = parse_hour(index["current"]["hour"])
        return Verification(hours, unverified, self._staleness(newest))

    def _read_keys(self):
        """Once: the publisher's key list (/.well-known/bloomcast.json), adopted if it
        names the key given (each hour then verifies under the key listed for it)."""
        if self._keys_read:
            return
        try:
            _, _, body = self._request("/.well-known/bloomcast.json",
                                       {"Accept-Encoding": "gzip"})
        except HTTPError as e:
            if e.status != 404:
                raise
            body = b"{}"  # a mirror without the document: the key given alone
        self.verifier.use_keys(json.loads(body).get("keys"))
        self._keys_read = True
