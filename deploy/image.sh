#!/usr/bin/env bash
# Builds the broker image FROM scratch: a static cmd/broker (CGO off) in a
# build context made here, so that nothing is pulled.
#
#	deploy/image.sh                 # tags minikafka:latest
#	deploy/image.sh minikafka:dev   # another tag
set -euo pipefail
cd "$(dirname "$0")/.."
tag="${1:-minikafka:latest}"
ctx="$(mktemp -d)"
trap 'rm -rf "$ctx"' EXIT
mkdir -p "$ctx/rootfs/data" "$ctx/rootfs/tmp"
CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$ctx/rootfs/broker" ./cmd/broker
cp deploy/Dockerfile "$ctx/Dockerfile"
docker build -q -t "$tag" "$ctx"
echo "$tag"
