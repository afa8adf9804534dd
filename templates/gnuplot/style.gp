# House style of every qkreport figure (prepended to each figure's script);
# the conventions it serves are written down in docs/figure-style.md.
set encoding utf8
# tick labels (and gprintf) with the true minus sign U+2212; qk-plot writes
# the numbers of its own labels the same way (qk_plot_format)
set minussign
# boxed labels (off-scale counts, notes) on an opaque white ground
set style textbox opaque fillcolor rgb "white" noborder margins 1.5,1
set border linewidth 1.0 linecolor rgb "#444444"
set tics nomirror out scale 0.6 textcolor rgb "#222222"
set grid back linecolor rgb "#e6e6e6" linewidth 1.0 dashtype solid
set key noautotitle box linecolor rgb "#cccccc" opaque
set style fill solid 0.85 border -1
# colour-blind-safe palette (Okabe-Ito) as line styles 1..8
set linetype 1 linecolor rgb "#0072B2" linewidth 2 pointtype 7 pointsize 0.6
set linetype 2 linecolor rgb "#D55E00" linewidth 2 pointtype 7 pointsize 0.6
set linetype 3 linecolor rgb "#009E73" linewidth 2 pointtype 7 pointsize 0.6
set linetype 4 linecolor rgb "#CC79A7" linewidth 2 pointtype 7 pointsize 0.6
set linetype 5 linecolor rgb "#E69F00" linewidth 2 pointtype 7 pointsize 0.6
set linetype 6 linecolor rgb "#56B4E9" linewidth 2 pointtype 7 pointsize 0.6
set linetype 7 linecolor rgb "#F0E442" linewidth 2 pointtype 7 pointsize 0.6
set linetype 8 linecolor rgb "#000000" linewidth 2 pointtype 7 pointsize 0.6
set linetype cycle 8
