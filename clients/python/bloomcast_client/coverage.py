"""What an answer covers (PROTOCOL.md sections 10, 11 and 13): the hours actually read,
those that could not be verified, and whether the source is shown current.

A source that stopped updating (a stale mirror) or that hides its newest hours (a
withholding one) would otherwise make a client answer "nothing changed" for hours it
never saw. So an answer names the first and last hours it read, and says when the newest
hour its source offers starts more than the publication lag bound (2 hours) before this
machine's current hour; with the publisher's key, a signed checkpoint of the newest
sealed hour also tells a withholding or stale copy from a quiet publisher. The command
line exits 3 for such an answer unless told to accept it (`--accept-stale`).

Time is read through `clock` (Unix seconds), which tests replace.
"""

import datetime
import time

LAG_HOURS = 2  # the publication lag bound
FRESHNESS_SECONDS = 600  # how old a version of the open hour may be, with a key
HOUR = datetime.timedelta(hours=1)


def clock():
    """Now, in Unix seconds (tests replace this function)."""
    return time.time()


def current_hour(now):
    """The start of the UTC hour holding `now` (Unix seconds), an aware datetime."""
    t = datetime.datetime.fromtimestamp(now, datetime.timezone.utc)
    return t.replace(minute=0, second=0, microsecond=0)


def rfc3339(hour):
    return hour.strftime("%Y-%m-%dT%H:00:00Z")


class Changes(list):
    """changed_since's answer: the list of (first hour, last hour, IDs that may have
    changed) it always was, and what it covers. `first` and `last`: the first and last
    hours read (RFC 3339; None when none was). `unverified`: with a key, the hours used
    without a verified signature (an open hour served unsigned), oldest first. `stale`:
    why the source is not shown current (empty when it is): hours after `last` may have
    changed unseen."""

    def __init__(self, items=(), first=None, last=None, unverified=(), stale=()):
        super().__init__(items)
        self.first, self.last = first, last
        self.unverified, self.stale = sorted(unverified), list(stale)


class Stale(Exception):
    """An answer whose source is not shown current (Changes.stale says why). Raised by a
    client not told to accept it (`accept_stale=False`), with the answer in `changes`:
    it holds for the hours it covers, and says nothing of those after them."""

    def __init__(self, changes):
        self.changes = changes
        super().__init__("; ".join(changes.stale))


def lag_reason(source, newest, static, now, lag=LAG_HOURS):
    """Why `source` is stale, or None: `newest` is the newest hour it offers (the
    index's `current`: the open hour of a server, the newest mirrored hour of a static
    mirror, whose next hour is the one it offers next), compared with `now`'s hour."""
    offered = newest + HOUR if static else newest
    here = current_hour(now)
    if offered >= here - datetime.timedelta(hours=lag):
        return None
    behind = int((here - offered) / HOUR)
    what = "mirrored" if static else "served"
    return (f"{source} is stale: the newest hour it offers is {rfc3339(newest)} ({what}), "
            f"{behind} hours before this machine's current hour {rfc3339(here)}, past the "
            f"publication lag bound of {lag} hours: what changed after it is not in this "
            "answer")


def checkpoint_reasons(source, checkpoint, newest_sealed, now, lag=LAG_HOURS):
    """Why a verified checkpoint (hour, made) shows `source` withholding or stale: its
    hour is newer than `newest_sealed`, the newest sealed hour the source offers, or it
    was made more than the lag bound before `now`."""
    hour, made = checkpoint
    reasons = []
    if newest_sealed is None or hour > newest_sealed:
        offered = ("no sealed hour" if newest_sealed is None
                   else f"sealed hours only through {rfc3339(newest_sealed)}")
        reasons.append(f"{source} withholds hours: the publisher's signed checkpoint names "
                       f"{rfc3339(hour)} sealed, but it offers {offered}")
    age = now - made
    if age > lag * 3600:
        reasons.append(f"{source} is stale: the publisher's checkpoint it serves was made "
                       f"{int(age // 60)} minutes ago (made={made}), past the publication "
                       f"lag bound of {lag} hours: hours sealed since may be missing")
    return reasons


def no_checkpoint_reason(source, newest, static):
    """Why a source without a checkpoint is not shown current, with a key: nothing
    signed says its newest hour is the publisher's (for a server, a fresh signed
    version of its open hour would)."""
    what = "" if static else ", and no fresh signed version of its open hour"
    return (f"{source} serves no signed checkpoint{what}: nothing shows that "
            f"{rfc3339(newest)} is the newest hour the publisher "
            f"{'sealed' if static else 'serves'} (a stale or withholding copy cannot be "
            "told from a quiet publisher)")
