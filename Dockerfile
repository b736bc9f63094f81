# syntax=docker/dockerfile:1
# Postline: a static binary on a minimal, non-root base. The data directory
# (SQLite database and secret.key) is a volume.
#   docker build -t postline .
#   docker run -d -p 8025:8025 -v postline-data:/var/lib/postline postline

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/postline ./cmd/postline

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/postline /usr/local/bin/postline
ENV POSTLINE_ADDR=0.0.0.0:8025 \
    POSTLINE_DATA_DIR=/var/lib/postline
VOLUME ["/var/lib/postline"]
EXPOSE 8025
USER nonroot:nonroot
ENTRYPOINT ["/usr/local/bin/postline"]
CMD ["serve"]
