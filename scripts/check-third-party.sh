#!/usr/bin/env bash
# Check that each patched copy of a dependency under third_party/ (every
# third_party/NAME with a CORRAL.files) is exactly upstream (the module and
# version its CORRAL.files names), filtered by that manifest, with its
# CORRAL.patch applied, plus corral's own files. `make lint` runs it.
#   scripts/check-third-party.sh [COPY...]                check; exits 1 on any difference
#   scripts/check-third-party.sh --write-patch [COPY...]  rewrite each CORRAL.patch as the
#                                                          diff between filtered upstream
#                                                          and the copy, then check
# COPY is a directory such as third_party/btree; the default is all of them.
# Needs go (upstream comes from the module cache via `go mod download`, so it
# works offline once cached), git (for `git apply` and to skip ignored files)
# and diff. See third_party/quic-go/CORRAL.md, "Checking the copy".
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

GO=${GO:-go}
# corral's own files in a copy: not upstream's, compared as they are.
OWN=(CORRAL.md CORRAL.patch CORRAL.files)

write_patch=false
if [ "${1:-}" = --write-patch ]; then
	write_patch=true
	shift
fi
copies=("$@")
if [ ${#copies[@]} -eq 0 ]; then
	for m in third_party/*/CORRAL.files; do
		copies+=("$(dirname "$m")")
	done
fi
for c in "${copies[@]}"; do
	case "$c" in
	-*)
		echo "usage: $0 [--write-patch] [third_party/NAME...]" >&2
		exit 2
		;;
	esac
	if [ ! -f "$c/CORRAL.files" ]; then
		echo "$c: no CORRAL.files (not a patched copy)" >&2
		exit 2
	fi
done

# check_copy COPY: the whole check of one copy. It runs in a subshell, so
# its exit ends only that check.
check_copy() {
COPY=${1%/}
MANIFEST=$COPY/CORRAL.files
PATCH=$COPY/CORRAL.patch
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# --- the manifest ------------------------------------------------------------
version=""
MODULE=""
signs=()
regexes=()

# glob_to_regex GLOB: "*" and "?" stay within a path element, "**" crosses
# "/", anything else is literal.
glob_to_regex() {
	local g=$1 out="" c i=0
	while [ "$i" -lt "${#g}" ]; do
		c=${g:i:1}
		case "$c" in
		'*')
			if [ "${g:i+1:1}" = '*' ]; then
				out+='.*'
				i=$((i + 1))
			else
				out+='[^/]*'
			fi
			;;
		'?') out+='[^/]' ;;
		[][.+^$\(\)\|\{\}\\]) out+="\\$c" ;;
		*) out+=$c ;;
		esac
		i=$((i + 1))
	done
	printf '^%s$' "$out"
}

lineno=0
while IFS= read -r line || [ -n "$line" ]; do
	lineno=$((lineno + 1))
	case "$line" in
	'' | '#'*) ;;
	'version '*) version=${line#version } ;;
	'module '*) MODULE=${line#module } ;;
	'+ '* | '- '*)
		signs+=("${line:0:1}")
		regexes+=("$(glob_to_regex "${line:2}")")
		;;
	*)
		echo "$MANIFEST:$lineno: cannot parse: $line" >&2
		exit 1
		;;
	esac
done <"$MANIFEST"
if [ -z "$version" ] || [ -z "$MODULE" ]; then
	echo "$MANIFEST: needs a \"module\" and a \"version\" line" >&2
	exit 1
fi

kept() {
	local f=$1 keep=- i
	for i in "${!regexes[@]}"; do
		if [[ $f =~ ${regexes[i]} ]]; then
			keep=${signs[i]}
		fi
	done
	[ "$keep" = + ]
}

# --- upstream, filtered --------------------------------------------------------
if ! json=$($GO mod download -json "$MODULE@$version" 2>&1); then
	echo "go mod download $MODULE@$version failed:" >&2
	echo "$json" >&2
	exit 1
fi
upstream=$(printf '%s\n' "$json" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
if [ -z "$upstream" ] || [ ! -d "$upstream" ]; then
	echo "go mod download $MODULE@$version gave no directory:" >&2
	echo "$json" >&2
	exit 1
fi

mkdir "$tmp/a"
(cd "$upstream" && find . -type f | sed 's|^\./||' | LC_ALL=C sort) >"$tmp/upstream-files"
while IFS= read -r f; do
	if kept "$f"; then
		printf '%s\0' "$f"
	fi
done <"$tmp/upstream-files" >"$tmp/kept-files"
(cd "$upstream" && xargs -0 -r cp --parents -t "$tmp/a") <"$tmp/kept-files"
chmod -R u+w "$tmp/a" # the module cache is read-only

# --- the copy as it is (tracked and untracked files, not ignored ones) ----------
mkdir "$tmp/copy"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	# (files deleted in the work tree are still listed: skip them)
	(cd "$COPY" && git ls-files -z --cached --others --exclude-standard |
		while IFS= read -r -d '' f; do
			if [ -f "$f" ]; then printf '%s\0' "$f"; fi
		done | xargs -0 -r cp --parents -t "$tmp/copy")
else
	cp -R "$COPY/." "$tmp/copy/"
fi

# patch_of: diff -ruN between $tmp/a and $tmp/b without the timestamps, so
# that the same trees always give the same patch.
patch_of() {
	(cd "$tmp" && diff -ruN a b) | sed -E 's/^((---|\+\+\+) [^\t]*)\t.*$/\1/' || true
}

if $write_patch; then
	cp -R "$tmp/copy" "$tmp/b"
	for f in "${OWN[@]}"; do
		rm -f "$tmp/b/$f"
	done
	patch_of >"$PATCH"
	cp "$PATCH" "$tmp/copy/CORRAL.patch"
	rm -rf "$tmp/b"
	echo "wrote $PATCH ($(grep -c '^+++ ' "$PATCH") files); review it with: git diff -- $PATCH"
fi
mv "$tmp/copy" "$tmp/b"

# --- expected = filtered upstream + CORRAL.patch + corral's own files ---------
patch_abs=$PWD/$PATCH
# (GIT_CEILING_DIRECTORIES: git apply must not take a repository above the
# temporary directory for the tree to patch.)
if ! out=$(cd "$tmp/a" && GIT_CEILING_DIRECTORIES=$(dirname "$tmp") git apply --whitespace=nowarn -p1 "$patch_abs" 2>&1); then
	echo "$PATCH does not apply to upstream $MODULE $version filtered by $MANIFEST:" >&2
	echo "$out" >&2
	echo "Fix the patch, or regenerate it from the copy with: scripts/check-third-party.sh --write-patch $COPY" >&2
	exit 1
fi
for f in "${OWN[@]}"; do
	if [ -f "$tmp/b/$f" ]; then
		cp "$tmp/b/$f" "$tmp/a/$f"
	fi
done

if summary=$(cd "$tmp" && diff -rq a b); then
	echo "$COPY is upstream $MODULE $version + CORRAL.patch ($(grep -c '^+++ ' "$PATCH") files patched)"
	exit 0
fi

{
	echo "$COPY differs from upstream $MODULE $version, filtered by CORRAL.files, plus CORRAL.patch:"
	printf '%s\n' "$summary" | sed -E \
		-e 's|^Files a/(.*) and b/.* differ$|  changed: \1|' \
		-e 's|^Only in b(/(.*))?: (.*)$|  only in the copy: \2/\3|' \
		-e 's|^Only in a(/(.*))?: (.*)$|  missing from the copy: \2/\3|' \
		-e 's|: /|: |'
	echo
	echo "diff (expected -> copy), first 100 lines:"
	patch_of | head -n 100
	echo
	echo "Nobody edits the copy silently. Either undo the edit (git checkout -- $COPY),"
	echo "or record it in the patch: scripts/check-third-party.sh --write-patch $COPY, then"
	echo "review git diff -- $PATCH and say why in $COPY/CORRAL.md. To keep or drop"
	echo "an upstream file, edit $MANIFEST."
} >&2
exit 1
}

status=0
for c in "${copies[@]}"; do
	(check_copy "$c") || status=1
done
exit $status
