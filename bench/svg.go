package bench

import (
	"cmp"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"strings"
)

// Pictures for docs/: plain SVG written by hand, no library.

// TraceSpan is one task of a Chrome trace: on which track (CPU) it ran and
// when, in seconds from the trace's origin.
type TraceSpan struct {
	Track      int
	Name       string
	Start, End float64
}

// ParseTraceSpans reads the complete ("X") events of a Chrome Trace Event
// JSON file, such as `numasteal run --trace` writes; name is the file, for
// errors.
func ParseTraceSpans(name string, data []byte) ([]TraceSpan, error) {
	var doc struct {
		TraceEvents []struct {
			Name string   `json:"name"`
			Ph   string   `json:"ph"`
			Ts   float64  `json:"ts"`
			Dur  *float64 `json:"dur"`
			Tid  int      `json:"tid"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("bench: trace %s: %w", name, err)
	}
	var out []TraceSpan
	for _, e := range doc.TraceEvents {
		if e.Ph != "X" || e.Dur == nil {
			continue
		}
		out = append(out, TraceSpan{Track: e.Tid, Name: e.Name, Start: e.Ts / 1e6, End: (e.Ts + *e.Dur) / 1e6})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("bench: trace %s: no complete (\"ph\":\"X\") events", name)
	}
	return out, nil
}

// TimelineSVG draws spans as a timeline: a band per track (CPU), and in it
// one lane per task running there at the same time, so a band's height is
// the number of tasks on that CPU over time. Compiles are blue, other steps
// (archives, links) orange.
func TimelineSVG(w io.Writer, title string, spans []TraceSpan) error {
	if len(spans) == 0 {
		return fmt.Errorf("bench: timeline %q: no spans", title)
	}
	byTrack := map[int][]TraceSpan{}
	end := 0.0
	for _, s := range spans {
		byTrack[s.Track] = append(byTrack[s.Track], s)
		end = max(end, s.End)
	}
	tracks := make([]int, 0, len(byTrack))
	for t := range byTrack {
		tracks = append(tracks, t)
	}
	slices.Sort(tracks)
	const left, right, top, laneH, width = 70.0, 20.0, 40.0, 9.0, 900.0
	type placed struct {
		s    TraceSpan
		lane int
	}
	var bands [][]placed
	var heights []int
	for _, t := range tracks {
		ss := byTrack[t]
		slices.SortFunc(ss, func(a, b TraceSpan) int { return cmp.Compare(a.Start, b.Start) })
		var laneEnd []float64
		var ps []placed
		for _, s := range ss {
			l := slices.IndexFunc(laneEnd, func(e float64) bool { return e <= s.Start })
			if l < 0 {
				l = len(laneEnd)
				laneEnd = append(laneEnd, 0)
			}
			laneEnd[l] = s.End
			ps = append(ps, placed{s, l})
		}
		bands = append(bands, ps)
		heights = append(heights, len(laneEnd))
	}
	total := 0
	for _, h := range heights {
		total += max(h, 2) // room for the two labels
	}
	height := top + float64(total)*laneH + float64(len(tracks))*8 + 40
	xs := func(t float64) float64 { return left + (width-left-right)*t/end }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="11">`+"\n", width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/><text x="%.0f" y="20" font-size="13">%s</text>`+"\n", left, html.EscapeString(title))
	y := top
	for i, t := range tracks {
		h := float64(max(heights[i], 2)) * laneH
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#f4f4f4"/><text x="4" y="%.1f">CPU %d</text>`+"\n", left, y, width-left-right, h, y+min(h, 12)-2, t)
		fmt.Fprintf(&b, `<text x="4" y="%.1f" fill="#666">max %d</text>`+"\n", y+min(h, 12)+9, heights[i])
		for _, p := range bands[i] {
			color := "#3b7dd8"
			if !strings.HasPrefix(p.s.Name, "obj/") && !strings.HasSuffix(p.s.Name, ".o") {
				color = "#e8891c"
			}
			fmt.Fprintf(&b, `<rect x="%.2f" y="%.1f" width="%.2f" height="%.1f" fill="%s"><title>%s %.2fs</title></rect>`+"\n",
				xs(p.s.Start), y+float64(p.lane)*laneH+1, max(xs(p.s.End)-xs(p.s.Start), 0.5), laneH-2, color, html.EscapeString(p.s.Name), p.s.End-p.s.Start)
		}
		y += h + 8
	}
	step := niceStep(end / 10)
	for t := 0.0; t <= end+1e-9; t += step {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999"/><text x="%.1f" y="%.1f" text-anchor="middle">%gs</text>`+"\n", xs(t), y, xs(t), y+4, xs(t), y+16, t)
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" fill="#3b7dd8">compile</text><text x="%.0f" y="%.1f" fill="#e8891c">archive/link</text>`+"\n</svg>\n", left, y+32, left+60, y+32)
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("bench: writing timeline: %w", err)
	}
	return nil
}

// Series is one line of a chart: a value (and its std dev) per x.
type Series struct {
	Name string
	Y    []float64
	Err  []float64 // may be nil
}

// LineChartSVG draws series against xs on a log2 x axis (the N of sdet).
func LineChartSVG(w io.Writer, title, xlabel, ylabel string, xs []float64, series []Series) error {
	if len(xs) == 0 || len(series) == 0 {
		return fmt.Errorf("bench: chart %q: no data", title)
	}
	const width, height, left, right, top, bottom = 720.0, 420.0, 80.0, 160.0, 40.0, 50.0
	ymax := 0.0
	for _, s := range series {
		for i, y := range s.Y {
			e := 0.0
			if i < len(s.Err) {
				e = s.Err[i]
			}
			ymax = max(ymax, y+e)
		}
	}
	if ymax <= 0 {
		ymax = 1
	}
	ystep := niceStep(ymax / 6)
	ymax = math.Ceil(ymax/ystep) * ystep
	lx0, lx1 := math.Log2(xs[0]), math.Log2(xs[len(xs)-1])
	if lx1 == lx0 {
		lx1 = lx0 + 1
	}
	px := func(x float64) float64 { return left + (width-left-right)*(math.Log2(x)-lx0)/(lx1-lx0) }
	py := func(y float64) float64 { return height - bottom - (height-top-bottom)*y/ymax }
	colors := []string{"#3b7dd8", "#e8891c", "#2ca02c", "#d62728", "#9467bd"}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="11">`+"\n", width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/><text x="%.0f" y="20" font-size="13">%s</text>`+"\n", left, html.EscapeString(title))
	for y := 0.0; y <= ymax+1e-9; y += ystep {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e0e0e0"/><text x="%.1f" y="%.1f" text-anchor="end">%g</text>`+"\n", left, py(y), width-right, py(y), left-4, py(y)+4, y)
	}
	for _, x := range xs {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%g</text>`+"\n", px(x), height-bottom+16, x)
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", (left+width-right)/2, height-12, html.EscapeString(xlabel))
	fmt.Fprintf(&b, `<text transform="translate(16 %.1f) rotate(-90)" text-anchor="middle">%s</text>`+"\n", (top+height-bottom)/2, html.EscapeString(ylabel))
	for k, s := range series {
		c := colors[k%len(colors)]
		var pts []string
		for i, y := range s.Y {
			if i >= len(xs) {
				break
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(xs[i]), py(y)))
			if i < len(s.Err) && s.Err[i] > 0 {
				fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", px(xs[i]), py(y-s.Err[i]), px(xs[i]), py(y+s.Err[i]), c)
			}
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", px(xs[i]), py(y), c)
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", c, strings.Join(pts, " "))
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="12" height="12" fill="%s"/><text x="%.1f" y="%.1f">%s</text>`+"\n", width-right+12, top+float64(k)*18, c, width-right+30, top+float64(k)*18+10, html.EscapeString(s.Name))
	}
	b.WriteString("</svg>\n")
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("bench: writing chart: %w", err)
	}
	return nil
}

// niceStep rounds x up to 1, 2 or 5 times a power of ten.
func niceStep(x float64) float64 {
	if x <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= x {
			return m * p
		}
	}
	return 10 * p
}
