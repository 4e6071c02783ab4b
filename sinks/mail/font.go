package mail

import "image"

// A 5×7 bitmap font for the chart's axis labels. The labels need digits,
// a few separators and unit letters only, so two dozen hand-drawn glyphs
// do instead of a font package and a rasteriser (golang.org/x/image is not
// otherwise a dependency).
const (
	glyphW, glyphH = 5, 7
	glyphAdvance   = glyphW + 1
)

var glyphs = map[rune][glyphH]string{
	'0': {".###.", "#...#", "#..##", "#.#.#", "##..#", "#...#", ".###."},
	'1': {"..#..", ".##..", "..#..", "..#..", "..#..", "..#..", ".###."},
	'2': {".###.", "#...#", "....#", "...#.", "..#..", ".#...", "#####"},
	'3': {"#####", "...#.", "..#..", "...#.", "....#", "#...#", ".###."},
	'4': {"...#.", "..##.", ".#.#.", "#..#.", "#####", "...#.", "...#."},
	'5': {"#####", "#....", "####.", "....#", "....#", "#...#", ".###."},
	'6': {"..##.", ".#...", "#....", "####.", "#...#", "#...#", ".###."},
	'7': {"#####", "....#", "...#.", "..#..", ".#...", ".#...", ".#..."},
	'8': {".###.", "#...#", "#...#", ".###.", "#...#", "#...#", ".###."},
	'9': {".###.", "#...#", "#...#", ".####", "....#", "...#.", ".##.."},
	':': {".....", ".##..", ".##..", ".....", ".##..", ".##..", "....."},
	',': {".....", ".....", ".....", ".....", ".##..", "..#..", ".#..."},
	'.': {".....", ".....", ".....", ".....", ".....", ".##..", ".##.."},
	'-': {".....", ".....", ".....", "#####", ".....", ".....", "....."},
	'k': {"#....", "#....", "#..#.", "#.#..", "##...", "#.#..", "#..#."},
	'M': {"#...#", "##.##", "#.#.#", "#.#.#", "#...#", "#...#", "#...#"},
	'G': {".###.", "#...#", "#....", "#.###", "#...#", "#...#", ".####"},
	'T': {"#####", "..#..", "..#..", "..#..", "..#..", "..#..", "..#.."},
	'P': {"####.", "#...#", "#...#", "####.", "#....", "#....", "#...."},
	'E': {"#####", "#....", "#....", "####.", "#....", "#....", "#####"},
	'U': {"#...#", "#...#", "#...#", "#...#", "#...#", "#...#", ".###."},
	'C': {".###.", "#...#", "#....", "#....", "#....", "#...#", ".###."},
}

// textWidth is the width in pixels of s drawn by drawText.
func textWidth(s string) int {
	n := 0
	for range s {
		n++
	}
	if n == 0 {
		return 0
	}
	return n*glyphAdvance - 1
}

// drawText draws s with its top-left corner at (x, y) in the text colour
// (colText), clipped to the image. Runes without a glyph leave a blank.
func drawText(img *image.Paletted, x, y int, s string) {
	for _, r := range s {
		g := glyphs[r]
		for gy, row := range g {
			for gx := 0; gx < len(row); gx++ {
				if row[gx] == '#' {
					setPixel(img, x+gx, y+gy, colText)
				}
			}
		}
		x += glyphAdvance
	}
}

func setPixel(img *image.Paletted, x, y int, c uint8) {
	if (image.Point{x, y}).In(img.Rect) {
		img.Pix[img.PixOffset(x, y)] = c
	}
}
