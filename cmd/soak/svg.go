package main

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// Panel geometry of the plot, in SVG user units (pixels).
const (
	svgWidth    = 860
	panelHeight = 150
	panelGap    = 36
	marginLeft  = 80
	marginRight = 20
	marginTop   = 48
)

// Panel is one small chart of the plot: one or more series sharing a y axis
// (e.g. tasks accepted and printed), time on x.
type Panel struct {
	Title  string
	Series []Series
	// Verdict, if set, is printed beside the title (PASS/FAIL and why).
	Verdict string
}

// panelColors colour the series of a panel in order.
var panelColors = []string{"#1f5fa8", "#c0392b", "#2e8b57"}

// WriteSVG draws the panels one under another, sharing the time axis span,
// as a self-contained SVG (no scripts, no external fonts): a polyline per
// series with one point per sample, y axis from 0 (or the minimum, if
// negative) to the maximum with ticks, x axis in minutes.
func WriteSVG(w io.Writer, title string, panels []Panel) error {
	bw := bufio.NewWriter(w)
	tmax := 0.0
	for _, p := range panels {
		for _, s := range p.Series {
			for _, t := range s.T {
				tmax = math.Max(tmax, t)
			}
		}
	}
	if tmax == 0 {
		tmax = 1
	}
	height := marginTop + len(panels)*(panelHeight+panelGap) + 10
	plotW := float64(svgWidth - marginLeft - marginRight)
	fmt.Fprintf(bw, `<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">
<rect width="100%%" height="100%%" fill="white"/>
<text x="%d" y="22" font-size="14" font-weight="bold">%s</text>
`, svgWidth, height, svgWidth, height, marginLeft, esc(title))
	xTicks := timeTicks(tmax)
	for i, p := range panels {
		top := float64(marginTop + i*(panelHeight+panelGap))
		bottom := top + panelHeight
		lo, hi := 0.0, 0.0
		for _, s := range p.Series {
			for _, v := range s.V {
				if !math.IsNaN(v) {
					lo, hi = math.Min(lo, v), math.Max(hi, v)
				}
			}
		}
		if hi == lo {
			hi = lo + 1
		}
		scale, unit := 1.0, ""
		if len(p.Series) > 0 && p.Series[0].Unit == "B" {
			scale, unit = 1<<20, " MiB"
		}
		yTicks := niceTicks(lo/scale, hi/scale)
		hi = math.Max(hi, yTicks[len(yTicks)-1]*scale)
		x := func(t float64) float64 { return marginLeft + t/tmax*plotW }
		y := func(v float64) float64 { return bottom - (v-lo)/(hi-lo)*panelHeight }
		fmt.Fprintf(bw, "<g class=\"panel\">\n<text x=\"%d\" y=\"%.1f\" font-weight=\"bold\">%s</text>\n", marginLeft, top-8, esc(p.Title+unit))
		if p.Verdict != "" {
			fmt.Fprintf(bw, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", svgWidth-marginRight, top-8, esc(p.Verdict))
		}
		fmt.Fprintf(bw, "<rect x=\"%d\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"none\" stroke=\"#999\"/>\n", marginLeft, top, plotW, panelHeight)
		for _, v := range yTicks {
			yy := y(v * scale)
			fmt.Fprintf(bw, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>\n", marginLeft, yy, marginLeft+plotW, yy)
			fmt.Fprintf(bw, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", marginLeft-6, yy+4, fmtTick(v))
		}
		for _, t := range xTicks {
			xx := x(t)
			fmt.Fprintf(bw, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#999\"/>\n", xx, bottom, xx, bottom+4)
			fmt.Fprintf(bw, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", xx, bottom+15, fmtTick(t/60))
		}
		for j, s := range p.Series {
			color := panelColors[j%len(panelColors)]
			var pts []string
			for k := range s.T {
				if !math.IsNaN(s.V[k]) {
					pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(s.T[k]), y(s.V[k])))
				}
			}
			fmt.Fprintf(bw, "<polyline data-series=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"%s\"/>\n", esc(s.Name), color, strings.Join(pts, " "))
			if len(p.Series) > 1 {
				fmt.Fprintf(bw, "<text x=\"%.1f\" y=\"%.1f\" fill=\"%s\">%s</text>\n", float64(marginLeft+8), top+14+float64(j)*13, color, esc(s.Name))
			}
		}
		fmt.Fprint(bw, "</g>\n")
	}
	fmt.Fprintf(bw, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">minutes since the agent started</text>\n</svg>\n", marginLeft+plotW/2, height-4)
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write svg: %w", err)
	}
	return nil
}

func esc(s string) string { return html.EscapeString(s) }

// timeTicks places x ticks at round minute steps over [0, tmax] seconds.
func timeTicks(tmax float64) []float64 {
	var out []float64
	for _, m := range niceTicks(0, tmax/60) {
		if m*60 <= tmax*1.0001 {
			out = append(out, m*60)
		}
	}
	return out
}

// niceTicks returns about five round values covering [lo, hi]: steps of 1,
// 2 or 5 times a power of ten.
func niceTicks(lo, hi float64) []float64 {
	if hi <= lo {
		hi = lo + 1
	}
	raw := (hi - lo) / 5
	pow := math.Pow(10, math.Floor(math.Log10(raw)))
	step := pow
	for _, m := range []float64{1, 2, 5, 10} {
		if m*pow >= raw {
			step = m * pow
			break
		}
	}
	var out []float64
	for v := math.Floor(lo/step) * step; v < hi+step*0.999; v += step {
		out = append(out, math.Round(v/step)*step)
	}
	return out
}

func fmtTick(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
}
