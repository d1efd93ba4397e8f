#!/bin/bash
# Builds custody_<version>_<arch>.deb from a release binary with Debian's own tools (dpkg-deb,
# dpkg-shlibdeps), staged in .build/deb and written to the clone's top folder. What `make deb` runs after `make release`.
#
#   scripts/deb/build.sh [BINARY]     (default .build/release/custody)
#   DEB_OUT=DIR scripts/deb/build.sh BINARY   (the package in DIR instead of the clone's folder:
#                                             `make deb-check` packages the debug build there)
#
# The package holds /usr/bin/custody (stripped), custody.service and custody.socket, the
# configuration (/etc/custody/serve.conf, a conffile, and the bundle directory), a man page
# for every command (generated from the argument parser's own help: custody
# --experimental-dump-help, through swift-argument-parser's generate-manual), bash, zsh and
# fish completions, the changelog, the copyright file and docs/operations.md. Depends: is what
# dpkg-shlibdeps finds the binary needs, and adduser for the maintainer scripts.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
binary=${1:-$root/.build/release/custody}
out=$root/.build/deb
packaging=$root/packaging/debian
[ -x "$binary" ] || { echo "deb: no binary at $binary (make release)" >&2; exit 1; }

version=$("$binary" --version)
# Who the package names as its maintainer: DEB_MAINTAINER, else the changelog's last entry.
maintainer=${DEB_MAINTAINER:-$(sed -n 's/^ -- \(.*>\)  .*/\1/p' "$packaging/changelog" | head -1)}
arch=$(dpkg --print-architecture)
name=custody_${version}_${arch}
stage=$out/$name
rm -rf "$stage" "$out/$name.deb"
mkdir -p "$stage/DEBIAN" "$stage/usr/bin" "$stage/lib/systemd/system" "$stage/etc/custody/bundle" \
    "$stage/usr/share/man/man1" "$stage/usr/share/bash-completion/completions" \
    "$stage/usr/share/zsh/vendor-completions" "$stage/usr/share/fish/vendor_completions.d" \
    "$stage/usr/share/doc/custody"

install -m 0755 "$binary" "$stage/usr/bin/custody"
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$stage/usr/bin/custody"
install -m 0644 "$packaging/custody.service" "$packaging/custody.socket" "$stage/lib/systemd/system/"
install -m 0644 "$packaging/serve.conf" "$stage/etc/custody/serve.conf"
install -m 0755 "$packaging/postinst" "$packaging/prerm" "$packaging/postrm" "$stage/DEBIAN/"
echo /etc/custody/serve.conf >"$stage/DEBIAN/conffiles"

# Man pages: one per command (custody.1, custody-serve.1, custody-tokens-create.1 …), from the
# help the binary itself gives, by swift-argument-parser's generate-manual (built once, in its
# own folder, from the copy of swift-argument-parser this package resolves).
manuals=$out/man
rm -rf "$manuals" && mkdir -p "$manuals"
generator=$out/generate-manual/release/generate-manual
if [ ! -x "$generator" ]; then
    (cd "$root" && swift build -c release --scratch-path "$out/generate-manual" \
        --package-path .build/checkouts/swift-argument-parser --product generate-manual) >"$out/generate-manual.log" 2>&1 \
        || { cat "$out/generate-manual.log" >&2; exit 1; }
fi
"$generator" "$stage/usr/bin/custody" --multi-page --output-directory "$manuals" \
    --date "$(date -u -d "@$(stat -c %Y "$packaging/changelog")" +%Y-%m-%d)" --section 1 \
    --authors "The Custody developers" >&2
# generate-manual names a subcommand's page custody.serve.1 and its NAME "custody serve";
# Debian's (and git's) convention, which `man custody-serve` and `man -k` find, is
# custody-serve.1 named custody-serve, its synopsis still `custody serve …`. An empty line is
# no mdoc: a paragraph break is .Pp.
for page in "$manuals"/*.1; do
    title=$(basename "$page" .1 | tr . -)
    awk -v title="$title" '
        /^\.Dt / { $2 = toupper(title) }
        /^\.Nm "/ && !named { command = substr($0, 5); $0 = ".Nm " title; named = 1 }
        /^\.Nm$/ && command != "" { $0 = ".Nm " command }
        /^\.Nd "/ { gsub(/^\.Nd "|"$/, ""); $0 = ".Nd " $0 }
        /^$/ { $0 = ".Pp" }
        { print }' "$page" | gzip -9n >"$stage/usr/share/man/man1/$title.1.gz"
done
chmod 0644 "$stage"/usr/share/man/man1/*

# Completions, from the binary's own parser.
# (bash-completion sources the file: no #! line.)
"$stage/usr/bin/custody" --generate-completion-script bash | sed '1{/^#!/d}' \
    >"$stage/usr/share/bash-completion/completions/custody"
"$stage/usr/bin/custody" --generate-completion-script zsh >"$stage/usr/share/zsh/vendor-completions/_custody"
"$stage/usr/bin/custody" --generate-completion-script fish >"$stage/usr/share/fish/vendor_completions.d/custody.fish"

install -m 0644 "$packaging/copyright" "$stage/usr/share/doc/custody/copyright"
install -d -m 0755 "$stage/usr/share/lintian/overrides"
install -m 0644 "$packaging/lintian-overrides" "$stage/usr/share/lintian/overrides/custody"
gzip -9n <"$packaging/changelog" >"$stage/usr/share/doc/custody/changelog.gz"
gzip -9n <"$root/docs/operations.md" >"$stage/usr/share/doc/custody/operations.md.gz"
chmod 0644 "$stage"/usr/share/doc/custody/*
find "$stage" -type d -exec chmod 0755 {} +

# Depends: the shared libraries the binary needs, as dpkg-shlibdeps finds them (it reads a
# debian/control, which only it uses: made here in a folder of its own).
shlibs=$(cd "$out" && mkdir -p shlibdeps/debian && printf 'Source: custody\n\nPackage: custody\nArchitecture: any\n' \
    >shlibdeps/debian/control && cd shlibdeps && dpkg-shlibdeps -O "$stage/usr/bin/custody" 2>/dev/null \
    | sed -n 's/^shlibs:Depends=//p')
[ -n "$shlibs" ] || { echo "deb: dpkg-shlibdeps found no libraries for $binary" >&2; exit 1; }

cat >"$stage/DEBIAN/control" <<CONTROL
Package: custody
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $(du -sk --exclude=DEBIAN "$stage" | cut -f1)
Depends: $shlibs, adduser
Section: admin
Priority: optional
Description: data-protection policy engine and decision service
 Custody decides, per account, where data may go (save-to and open-from
 locations, sharing, clipboard, printing, notifications, encryption) from the
 Intune app protection policies administrators export from Microsoft Graph,
 and protects per-account data with libsodium envelopes and selective wipe.
 .
 This package holds the custody command and its decision service (custody
 serve) as a systemd service with socket activation.
CONTROL

dpkg-deb --root-owner-group -Zxz --build "$stage" "$out/$name.deb" >&2
destination=${DEB_OUT:-$root}
mkdir -p "$destination"
cp "$out/$name.deb" "$destination/$name.deb"
echo "$destination/$name.deb"
