# syntax=docker/dockerfile:1
# Build stage: compile the release binary.
FROM rust:1-slim-bookworm AS build
WORKDIR /src
# The whole source tree (see .dockerignore): the manifest names test and bench targets,
# and the dashboard embeds the JavaScript client from clients/js.
COPY . .
# .git stays out of the context: `bloomcast --version` names the commit given here
# (docker build --build-arg SOURCE_COMMIT=$(git rev-parse --short=12 HEAD) .), else "unknown".
ARG SOURCE_COMMIT=
RUN cargo build --release --locked --bin bloomcast

# Runtime stage: a slim image with the binary, its default config and a non-root user.
FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates curl \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /var/lib/bloomcast --create-home bloomcast
WORKDIR /app
COPY --from=build /src/target/release/bloomcast /usr/local/bin/bloomcast
COPY config ./config
ENV BLOOMCAST_LISTEN=0.0.0.0:8080 \
    BLOOMCAST_DATA_DIR=/var/lib/bloomcast \
    RUST_LOG=info
VOLUME ["/var/lib/bloomcast"]
USER bloomcast
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=3s --start-period=10s --retries=3 \
  CMD curl -fsS http://127.0.0.1:8080/healthz || exit 1
STOPSIGNAL SIGTERM
ENTRYPOINT ["bloomcast"]
CMD ["serve"]
