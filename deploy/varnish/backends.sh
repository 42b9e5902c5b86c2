#!/usr/bin/env bash
# Prints a main VCL for Varnish in front of bloomcast nodes: one backend per HOST:PORT
# argument, a director that sends each URL to one healthy node (so that one node builds
# and keeps a union, and keeps the open hour's versions that `dcz` deltas are made
# against; a linked dictionary, /dictionaries/<hour path>/<id>, goes where its hour path
# goes, to the node that kept it; a sick node's URLs move to the others), falling back
# to all nodes when every probe fails (a node without its database still serves the
# hours it holds), and the policy in bloomcast.vcl beside this script.
#
#   deploy/varnish/backends.sh 10.0.0.11:8080 10.0.0.12:8080 > /etc/varnish/default.vcl
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 HOST:PORT..." >&2; exit 2; }
here="$(cd "$(dirname "$0")" && pwd)"
cat <<VCL
vcl 4.1;

import directors;
import std;

probe bloomcast_healthz {
    .url = "/healthz";
    .interval = 2s;
    .timeout = 1s;
    .window = 3;
    .threshold = 2;
}
VCL
n=0
for node in "$@"; do
  n=$((n + 1))
  host="${node%:*}"
  port="${node##*:}"
  cat <<VCL

backend node$n {
    .host = "$host";
    .port = "$port";
    .probe = bloomcast_healthz;
    .connect_timeout = 1s;
    .first_byte_timeout = 35s;
    .between_bytes_timeout = 20s;
}
backend node${n}_unprobed {
    .host = "$host";
    .port = "$port";
    .connect_timeout = 1s;
    .first_byte_timeout = 35s;
    .between_bytes_timeout = 20s;
}
VCL
done
cat <<VCL

sub vcl_init {
    new healthy = directors.hash();
    new any = directors.round_robin();
VCL
for i in $(seq 1 "$n"); do
  echo "    healthy.add_backend(node$i, 1.0);"
  echo "    any.add_backend(node${i}_unprobed);"
done
cat <<VCL
}

sub vcl_recv {
    # A linked dictionary is held by the node that kept it: the one its hour path goes to.
    if (req.url ~ "^/dictionaries/") {
        set req.backend_hint = healthy.backend(regsub(req.url, "^/dictionaries(/.*)/[^/]*$", "\\1"));
    } else {
        set req.backend_hint = healthy.backend(req.url);
    }
    if (!std.healthy(req.backend_hint)) {
        set req.backend_hint = any.backend();
    }
}

sub vcl_backend_fetch {
    # A retried read (bloomcast.vcl) goes to the next node, not the one that failed.
    if (bereq.retries > 0) {
        set bereq.backend = any.backend();
    }
}

include "$here/bloomcast.vcl";
VCL
