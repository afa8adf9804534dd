/* The layout check of the report's figures (tests/layout-check.sh adds this
 * script to a copy of report/index.html). After the page has laid out, it
 * takes each figure in turn, puts its figure.svg inline at the width the
 * page shows the figure (then takes it out again: the SVGs share element
 * ids), and measures the rendered box of every text element:
 *   small     a text whose capitals and digits are drawn under
 *             LAYOUT_MIN_PX pixels tall (0.73 of its font size on the
 *             screen, DejaVu Sans);
 *   outside   a text that leaves the canvas (its box from the capital
 *             height to the descender);
 *   overlap   two text boxes that overlap (the box from the capital height
 *             to the descender, so that two lines one above the other do
 *             not count; tolerance LAYOUT_SLACK_PX).
 * A figure the page shows as its PNG (embed img) is checked for small text
 * only: the PNG's layout is not the SVG's. The findings go into the DOM,
 * body[data-layout] = "done FIGURES" and one <li class="layout-problem">
 * each, read by the shell script from Chromium's --dump-dom. */
(function () {
  'use strict';
  var LAYOUT_MIN_PX = 7;
  var LAYOUT_SLACK_PX = 1;
  /* DejaVu Sans, in em: the text box runs from the ascender (0.93 above
   * the baseline) to the descender (0.24 below); capitals and digits
   * reach 0.73 above it. */
  var CAPS_EM = 0.73;
  var ABOVE_CAPS_EM = 0.93 - CAPS_EM;

  function load(url) {
    return new Promise(function (resolve, reject) {
      var req = new XMLHttpRequest();
      req.open('GET', url);
      req.onload = function () {
        if (req.responseXML && req.responseXML.documentElement.nodeName === 'svg')
          resolve(req.responseXML.documentElement);
        else
          reject(new Error('not an SVG'));
      };
      req.onerror = function () { reject(new Error('cannot load')); };
      req.send();
    });
  }

  /* The figures of the page: id (study/NN), number, how it is shown, the
   * element shown and the URL of its SVG. */
  function pageFigures() {
    var out = [];
    document.querySelectorAll('figure').forEach(function (fig) {
      var object = fig.querySelector('object');
      var source = fig.querySelector('picture source');
      var img = fig.querySelector('img');
      var shown = object || img;
      if (!shown)
        return;
      var url = object ? object.getAttribute('data')
        : source ? source.getAttribute('srcset')
        : img.getAttribute('src').replace(/figure\.png$/, 'figure.svg');
      var m = url.match(/figures\/([^/]+)\/([0-9]+)_[^/]*\/figure\.svg$/);
      var caption = fig.querySelector('figcaption');
      var number = caption && caption.textContent.match(/^Figure ([0-9.]+[0-9])/);
      out.push({
        id: m ? m[1] + '/' + m[2] : url,
        number: number ? number[1] : '',
        embed: object ? 'object' : source ? 'picture' : 'img',
        width: shown.getBoundingClientRect().width,
        url: url
      });
    });
    return out;
  }

  function label(t) {
    var s = t.textContent.replace(/\s+/g, ' ').trim();
    return '"' + (s.length > 40 ? s.slice(0, 37) + '...' : s) + '"';
  }

  /* The box of a text in screen pixels, trimmed to its capitals: the trim
   * is on the side the glyphs' tops face (a text turned by 90 degrees has
   * them left or right). */
  function inkBox(t, r, px) {
    var m = t.getScreenCTM();
    var box = {left: r.left, right: r.right, top: r.top, bottom: r.bottom};
    var trim = ABOVE_CAPS_EM * px;
    if (Math.abs(m.b) < 1e-6)
      box[m.d > 0 ? 'top' : 'bottom'] += m.d > 0 ? trim : -trim;
    else if (Math.abs(m.a) < 1e-6)
      box[m.b < 0 ? 'left' : 'right'] += m.b < 0 ? trim : -trim;
    return box;
  }

  function overlap(a, b, lo, hi) {
    return Math.min(a[hi], b[hi]) - Math.max(a[lo], b[lo]);
  }

  /* gnuplot draws a boxed label twice at one place (box, then text): one
   * text, not two that overlap. */
  function sameText(a, b) {
    return a.t.textContent === b.t.textContent && Math.abs(a.r.left - b.r.left) < 0.5 &&
      Math.abs(a.r.top - b.r.top) < 0.5;
  }

  /* The screen boxes a graphic element could hold a key sample in: the
   * element's, or of a path its first and its last subpath (gnuplot writes
   * a line's sample and its data as one path). */
  function pieceRects(e) {
    var d = e.nodeName === 'path' ? e.getAttribute('d') || '' : '';
    var starts = [];
    d.replace(/[Mm]/g, function (m, at) { starts.push(at); return m; });
    if (starts.length < 2)
      return [e.getBoundingClientRect()];
    var pieces = [d.slice(0, starts[1]), d.slice(starts[starts.length - 1])];
    return pieces.map(function (piece) {
      var part = e.cloneNode(false);
      part.setAttribute('d', piece);
      e.parentNode.insertBefore(part, e);
      var r = part.getBoundingClientRect();
      e.parentNode.removeChild(part);
      return r;
    });
  }

  /* The key entries of a gnuplot SVG: in a plot's group (id gnuplot_plot_*,
   * its <title> the entry's text) the text that reads as the title, and its
   * sample: of the graphics the group draws after that text (the sample of
   * a line comes before the data, of points after them), the one nearest
   * the text on its line, at most 4 em away. Its box is in screen pixels,
   * a line one pixel high at least. */
  function keySamples(svg, texts) {
    var out = [];
    svg.querySelectorAll('g[id^="gnuplot_plot_"]').forEach(function (g) {
      var title = g.querySelector('title');
      var text = null, best = null;
      if (!title)
        return;
      g.querySelectorAll('*').forEach(function (e) {
        if (!text) {
          if (e.nodeName === 'text' && e.textContent.trim() === title.textContent.trim())
            text = texts.filter(function (x) { return x.t === e; })[0];
          return;
        }
        if (!/^(use|path|polyline|polygon|rect|circle|line)$/.test(e.nodeName) ||
            text.t.parentNode.contains(e))
          return;
        pieceRects(e).forEach(function (r) {
          var mid = (r.top + r.bottom) / 2;
          if ((r.width === 0 && r.height === 0) || mid < text.r.top || mid > text.r.bottom)
            return;
          var gap = Math.max(r.left - text.r.right, text.r.left - r.right, 0);
          if (gap <= 4 * text.px && (!best || gap < best.gap))
            best = {gap: gap, box: {left: r.left, right: r.right,
              top: Math.min(r.top, mid - 0.5), bottom: Math.max(r.bottom, mid + 0.5)}};
        });
      });
      if (text && best)
        out.push({text: text.t, box: best.box});
    });
    return out;
  }

  function measure(svg, fig, problems) {
    var canvas = svg.getBoundingClientRect();
    var texts = [];
    svg.querySelectorAll('text').forEach(function (t) {
      if (!t.textContent.trim())
        return;
      var r = t.getBoundingClientRect();
      if (r.width === 0 && r.height === 0)
        return;
      var m = t.getScreenCTM();
      var scale = Math.sqrt(m.a * m.a + m.b * m.b);
      var px = parseFloat(getComputedStyle(t).fontSize) * scale;
      texts.push({t: t, r: r, px: px, caps: CAPS_EM * px, box: inkBox(t, r, px)});
    });
    /* the parts of a text drawn in a font of their own (subscripts,
     * superscripts, a smaller second line) are measured for size too */
    var parts = [];
    texts.forEach(function (x) {
      x.t.querySelectorAll('tspan').forEach(function (s) {
        if (!s.textContent.trim() || s.querySelector('tspan'))
          return;
        var px = parseFloat(getComputedStyle(s).fontSize) / parseFloat(getComputedStyle(x.t).fontSize) * x.px;
        parts.push({t: s, px: px, caps: CAPS_EM * px});
      });
    });
    var where = fig.number ? fig.id + ' (figure ' + fig.number + ')' : fig.id;
    var say = function (what) { problems.push(where + ': ' + what); };
    var smallest = Infinity;
    texts.concat(parts).forEach(function (x) { smallest = Math.min(smallest, x.caps); });
    fig.smallest = smallest;
    fig.canvas = svg.viewBox.baseVal.width;
    if (smallest < LAYOUT_MIN_PX) {
      var small = texts.concat(parts).filter(function (x) { return x.caps < LAYOUT_MIN_PX; });
      say('text ' + smallest.toFixed(1) + ' px tall (capitals) at ' + Math.round(fig.width) +
          ' px wide, under ' + LAYOUT_MIN_PX + ' px: ' + small.length + ' texts, e.g. ' +
          label(small[0].t) + ' (font ' + small[0].px.toFixed(1) + ' px)');
    }
    if (fig.embed === 'img')
      return texts.length;
    texts.forEach(function (x) {
      var s = LAYOUT_SLACK_PX;
      var out = [canvas.left - x.box.left, x.box.right - canvas.right,
                 canvas.top - x.box.top, x.box.bottom - canvas.bottom];
      var by = Math.max.apply(null, out);
      if (by > s)
        say('text ' + label(x.t) + ' leaves the canvas by ' + by.toFixed(1) + ' px');
    });
    for (var i = 0; i < texts.length; i++)
      for (var j = i + 1; j < texts.length; j++) {
        if (sameText(texts[i], texts[j]))
          continue;
        var w = overlap(texts[i].box, texts[j].box, 'left', 'right');
        var h = overlap(texts[i].box, texts[j].box, 'top', 'bottom');
        if (w > LAYOUT_SLACK_PX && h > LAYOUT_SLACK_PX)
          say('text ' + label(texts[i].t) + ' overlaps ' + label(texts[j].t) + ' (' +
              w.toFixed(1) + ' x ' + h.toFixed(1) + ' px)');
      }
    keySamples(svg, texts).forEach(function (k) {
      texts.forEach(function (x) {
        if (x.t === k.text)
          return;
        var w = overlap(k.box, x.box, 'left', 'right');
        var h = overlap(k.box, x.box, 'top', 'bottom');
        if (w > LAYOUT_SLACK_PX && h > 0)
          say('the key sample of ' + label(k.text) + ' overlaps text ' + label(x.t) + ' (' +
              w.toFixed(1) + ' px)');
      });
    });
    return texts.length;
  }

  function report(figures, problems, texts) {
    var list = document.createElement('ul');
    list.id = 'layout-problems';
    problems.forEach(function (p) {
      var li = document.createElement('li');
      li.className = 'layout-problem';
      li.textContent = p;
      list.appendChild(li);
    });
    document.body.appendChild(list);
    var sizes = document.createElement('ul');
    sizes.id = 'layout-sizes';
    figures.forEach(function (f) {
      var li = document.createElement('li');
      li.className = 'layout-size';
      li.textContent = f.id + ' ' + f.embed + ' canvas ' + f.canvas + ' shown ' + Math.round(f.width) +
        ' smallest text ' + (f.smallest || 0).toFixed(1) + ' px';
      sizes.appendChild(li);
    });
    document.body.appendChild(sizes);
    document.body.setAttribute('data-layout-texts', String(texts));
    document.body.setAttribute('data-layout', 'done ' + figures.length);
  }

  window.addEventListener('load', function () {
    var figures = pageFigures();
    var problems = [];
    var texts = 0;
    var host = document.createElement('div');
    host.style.cssText = 'position:absolute; left:0; top:0;';
    document.body.appendChild(host);
    var next = Promise.resolve();
    figures.forEach(function (fig) {
      next = next.then(function () { return load(fig.url); }).then(function (svg) {
        svg = document.importNode(svg, true);
        svg.style.width = fig.width + 'px';
        svg.style.height = 'auto';
        svg.style.display = 'block';
        host.appendChild(svg);
        texts += measure(svg, fig, problems);
        host.removeChild(svg);
      }, function (e) {
        problems.push(fig.id + ': ' + fig.url + ': ' + e.message);
      });
    });
    next.then(function () { report(figures, problems, texts); });
  });
})();
