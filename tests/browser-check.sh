#!/bin/bash
# Opens report/index.html in headless Chromium (closed-network flags, a fresh
# profile), dumps the DOM after load and takes a screenshot, then checks:
# the page's self-check says ok (every image loaded, every contents link
# resolves, no script error), every section is present, every table fits
# the page at 1400 px, a number's hover text names its source and a click
# opens its entry, and Chromium logged no console error. The screenshot is
# kept in build/browser/ for review.
set -u
cd "$(dirname "$0")/.."
source tests/lib-e2e.sh

page=${1:-report/index.html}
out=build/browser
mkdir -p "$out"
profile=$(mktemp -d)
trap 'rm -rf "$profile"; rm -f "$e2e_out" "$e2e_err"' EXIT
flags=(--headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking
       --disable-component-update --disable-sync --disable-quic --user-data-dir="$profile"
       --allow-file-access-from-files --virtual-time-budget=15000 --enable-logging=stderr --v=0)
url="file://$(realpath "$page")"

run chromium "${flags[@]}" --dump-dom "$url"
expect_status 0 "chromium dumps the DOM"
cp "$e2e_out" "$out/dom.html"
cp "$e2e_err" "$out/chromium.log"
check=$(grep -o 'data-check="[^"]*"' "$out/dom.html" | head -1)
if [ "$check" = 'data-check="ok"' ]; then ok; else bad "page self-check: ${check:-no data-check attribute}"; fi
images=$(grep -o 'data-images="[0-9]*"' "$out/dom.html" | grep -o '[0-9]*')
if [ "${images:-0}" -ge 1 ]; then ok; else bad "page has images (${images:-0})"; fi
for section in $(grep -o 'href="#[a-z0-9_-]*"' "$page" | sed 's/href="#//; s/"//' | sort -u); do
    if grep -q " id=\"$section\"" "$out/dom.html"; then ok; else bad "section $section present"; fi
done
# the extra models' section: both models' published RULER scores and their
# AP per length, from the page's numbers (report/numbers.tex has the same)
numbers=$(dirname "$page")/numbers.tex
if grep -q 'qkdef{extra\.model\.' "$numbers" 2>/dev/null; then
    extra=$(sed -n '/<section id="extra">/,/<\/section>/p' "$out/dom.html")
    for key in extra.ruler.llama3.1-8b.l128k extra.ruler.mistral-v0.2-7b.l128k extra.aplen.llama3.1-8b.l32k; do
        value=$(sed -n "s/^\\\\qkdef{$key}{\\(.*\\)}\$/\\1/p" "$numbers")
        if [ -n "$value" ] && grep -qF ">$value<" <<<"$extra"; then ok; else bad "extra section shows $key (${value:-no value})"; fi
    done
    if grep -q '11_extra_models_ruler/figure.png' <<<"$extra"; then ok; else bad "extra section shows figure attention-plasticity/11"; fi
fi
# at 1400 px every table fits its column: none hides columns behind a
# scroll bar (the page's self-check lists those that would)
run chromium "${flags[@]}" --window-size=1400,2000 --dump-dom "$url"
wide=$(grep -o 'data-wide-tables="[^"]*"' "$e2e_out" | head -1)
if [ "$wide" = 'data-wide-tables=""' ]; then ok; else
    bad "every table fits the page at 1400 px (${wide:-no data-wide-tables attribute})"; fi
if grep -E 'CONSOLE|Uncaught|Failed to load' "$out/chromium.log" | grep -qvi 'dbus\|gpu'; then
    bad "console errors (see $out/chromium.log)"
else
    ok
fi

# a number's hover text is its key and source, and a click opens its entry in
# numbers.html: the page in a frame, the number's title read and the number
# clicked by a script of the frame's page
key=pca.tax.mixed_pct
if grep -q "data-qk=\"$key\"" "$page"; then
    cat > "$out/hover.html" <<HTML
<!DOCTYPE html><html><body><iframe id="f" src="$url" width="1200" height="800"></iframe><script>
var f = document.getElementById('f');
f.addEventListener('load', function first() {
  f.removeEventListener('load', first);
  var n = f.contentDocument.querySelector('[data-qk="$key"]');
  document.body.setAttribute('data-hover', n ? n.title : 'no such number');
  f.addEventListener('load', function () {
    var w = f.contentWindow, e = f.contentDocument.getElementById(w.location.hash.slice(1));
    document.body.setAttribute('data-entry', w.location.pathname.replace(/.*\//, '') + w.location.hash +
      (e ? ' ' + e.textContent.slice(0, 200) : ' (no entry)'));
  });
  if (n) n.click();
});
</script></body></html>
HTML
    run chromium "${flags[@]}" --disable-web-security --dump-dom "file://$(realpath "$out/hover.html")"
    hover=$(grep -o 'data-hover="[^"]*"' "$e2e_out" | head -1)
    if [[ $hover == *"$key — results/"*"/qk_heads.csv: category"* ]]; then ok; else
        bad "hovering $key shows its key and source table (${hover:-no hover text})"; fi
    entry=$(grep -o 'data-entry="[^"]*"' "$e2e_out" | head -1)
    if [[ $entry == *"numbers.html#n-$key $key"* ]]; then ok; else
        bad "a click on $key opens its entry in numbers.html (${entry:-none})"; fi
fi

# the whole page in one image (scaled down when it is taller than a
# screenshot can be), and each section on its own through a frame that opens
# the page at the section's anchor
height=$(grep -o 'data-height="[0-9]*"' "$out/dom.html" | grep -o '[0-9]*')
height=${height:-4000}
scale=$(awk -v h="$height" 'BEGIN { s = 16000 / h; printf "%.3f", s < 1 ? s : 1 }')
run chromium "${flags[@]}" --force-device-scale-factor="$scale" --window-size=1400,"$height" \
    --screenshot="$out/report.png" "$url"
expect_status 0 "chromium takes a screenshot of the whole page ($height px)"
if [ -s "$out/report.png" ]; then ok; else bad "screenshot written"; fi
for section in $(grep -o 'href="#[a-z0-9_-]*"' "$page" | sed 's/href="#//; s/"//' | sort -u); do
    printf '<!DOCTYPE html><html><body style="margin:0"><iframe src="%s#%s" width="1400" height="2400" style="border:0"></iframe></body></html>\n' \
        "$url" "$section" > "$out/frame-$section.html"
    run chromium "${flags[@]}" --window-size=1400,2400 --screenshot="$out/section-$section.png" \
        "file://$(realpath "$out/frame-$section.html")"
    if [ "$e2e_status" -eq 0 ] && [ -s "$out/section-$section.png" ]; then ok; else bad "screenshot of section $section"; fi
done

finish
