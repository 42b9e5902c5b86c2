# bloomcast behind Varnish: the caching policy. It holds no backends; the main VCL
# (deploy/varnish/backends.sh prints one) declares the nodes, a director named `nodes`,
# and includes this file. Run varnishd with `-p http_gzip_support=off` (see
# docs/DEPLOY.md): bloomcast codes its own gzip and `dcz` bodies, and each one's
# `Repr-Digest` and `ETag` name those very bytes, which Varnish's own gzip handling
# would recode under them.
#
# What the nodes' headers already say, and this file keeps:
# - closed hours, complete days and since-ranges: `max-age=31536000, immutable`
#   with a strong ETag: cached once per variant, revalidated here (304) forever;
# - the open hour and open unions: `max-age=N` (N never past the end of the
#   hour): cached N seconds, never served staler (no grace on them);
# - `Vary: Accept, Accept-Encoding` (and `Available-Dictionary` on the open hour): one
#   object per form and coding, so variants never mix;
# - errors, `/healthz`, `/stats`: `no-store`; `/history`: `private, no-store`;
#   `/updates` is a POST: never cached.

sub vcl_recv {
    # A fetch that follows an event of /events, restarted by vcl_hit below: it goes to
    # a node and its answer replaces the copy held.
    if (req.restarts > 0 && req.http.X-Bloom-Refetch) {
        unset req.http.X-Bloom-Refetch;
        set req.hash_always_miss = true;
    }
    # Operator routes answer for one node at one moment: never from the cache.
    if (req.url ~ "^/(metrics|healthz|stats)(\?|$)") {
        return (pass);
    }
    # The event stream (Server-Sent Events) is no object to cache: passed to a node and
    # streamed to the subscriber as the node writes it (vcl_backend_response).
    if (req.url ~ "^/events(\?|$)") {
        return (pass);
    }
    # One spelling per coding set, so that caches hold one object per variant the
    # nodes can send, not one per browser's Accept-Encoding string. A coding counts
    # when listed with q > 0 (as the nodes read it); `dcz` only with a dictionary
    # offered.
    if (req.http.Accept-Encoding) {
        if (req.http.Accept-Encoding ~ "(?i)(^|,)\s*(gzip|x-gzip|\*)\s*(;\s*q\s*=\s*(1(\.0*)?|0?\.\d*[1-9]\d*)\s*)?(,|$)") {
            set req.http.X-Gzip = "1";
        }
        if (req.http.Available-Dictionary &&
            req.http.Accept-Encoding ~ "(?i)(^|,)\s*dcz\s*(;\s*q\s*=\s*(1(\.0*)?|0?\.\d*[1-9]\d*)\s*)?(,|$)") {
            if (req.http.X-Gzip) {
                set req.http.Accept-Encoding = "dcz, gzip";
            } else {
                set req.http.Accept-Encoding = "dcz";
            }
        } elsif (req.http.X-Gzip) {
            set req.http.Accept-Encoding = "gzip";
        } else {
            unset req.http.Accept-Encoding;
        }
        unset req.http.X-Gzip;
    }
    if (req.http.Accept-Encoding !~ "dcz") {
        # The nodes ignore a dictionary without `dcz`: keep it out of the variant key.
        unset req.http.Available-Dictionary;
    }
    # bloomcast sets no cookies and reads none; a poller's cookies for the domain would
    # only make Varnish pass its polls to a node.
    unset req.http.Cookie;
    # Everything else as Varnish's built-in policy has it: only GET and HEAD are
    # looked up, and a request with `Authorization` (the publisher's /history) passes.
}

sub vcl_backend_response {
    if (bereq.url ~ "^/events(\?|$)") {
        # Each event as it comes; the nodes' heartbeat (every 30 s) keeps the stream
        # inside its between_bytes_timeout (90 s, vcl_backend_fetch).
        set beresp.do_stream = true;
        set beresp.uncacheable = true;
        return (deliver);
    }
    # What may be served past its max-age while a fresh copy is fetched: nothing. The
    # open hour's promise is "never older than max-age"; closed hours never expire.
    set beresp.grace = 0s;
    # Expired objects stay a while to be revalidated with If-None-Match: the open
    # hour's unchanged versions come back as a 304, not a whole filter.
    if (beresp.http.ETag) {
        set beresp.keep = 1h;
    }
}

sub vcl_backend_error {
    # A node that went away mid-request: try the others (reads only).
    if (bereq.retries < 2 && (bereq.method == "GET" || bereq.method == "HEAD")) {
        return (retry);
    }
}

sub vcl_hit {
    # A client told by /events that a newer version exists asks for a copy no older
    # than the event (`Cache-Control: no-cache`), naming the version it holds
    # (`If-None-Match`). When the copy held here is that very version and is of an open
    # resource (it expires within the hour; an immutable one does not), it predates the
    # event: fetch it again, once, and keep the answer for everyone; the subscribers
    # following one event then share that one fetch. Closed hours are never fetched
    # again this way, and a copy newer than the client's is served as it is.
    if (req.http.Cache-Control ~ "(?i)no-cache" && req.restarts == 0 &&
        obj.ttl < 1h && req.http.If-None-Match == obj.http.ETag) {
        set req.http.X-Bloom-Refetch = "1";
        return (restart);
    }
}

sub vcl_backend_fetch {
    if (bereq.url ~ "^/events(\?|$)") {
        # A stream is quiet between heartbeats (30 s): wait longer than that.
        set bereq.between_bytes_timeout = 90s;
        set bereq.first_byte_timeout = 60s;
    }
}

# An hour's paged form is read one page at a time by Range (docs/PROTOCOL.md section 12,
# "Huge hours by the page"): Varnish fetches the whole body once and cuts each range
# from its cache (several ranges in one request it answers 416; readers then ask one at
# a time), repeating the stored response's headers on every 206. A page's reader reads
# none of them but the range's own, so a range of a page is sent without the list of
# headers a browser may read, the whole body's digest (a range cannot be checked
# against it; the origin's own 206 has none either) and Varnish's transaction ids: per
# page, half of the headers. (Varnish cuts the range after vcl_deliver: here the
# response is still the whole body's 200.)
sub vcl_deliver {
    if (req.http.Range && req.url ~ "^/\d{4}/\d\d/\d\d/\d\d\.pages(\?|$)") {
        unset resp.http.Access-Control-Expose-Headers;
        unset resp.http.Repr-Digest;
        unset resp.http.X-Varnish;
    }
}
