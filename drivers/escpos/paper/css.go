package paper

// CSS is the stylesheet the paper fragments need. The page embeds it in its
// own stylesheet: fragments carry classes only, never style attributes, so
// that they work under a Content-Security-Policy without 'unsafe-inline'.
//
// Character sizes: a row of size WxH gets classes wW and hH. The row's font
// is H times the paper's (so double height is really double height) and it
// is squeezed or stretched horizontally by W/H, so that W columns of the
// paper hold one character, as on the printer. Its layout width is
// H/W of the paper, which the transform brings back to the paper's width.
//
// Images (QR codes, barcodes, logos) are PNGs as wide as the paper in dots,
// margins included, so that width:100% gives every one its printed size.
const CSS = `.paper{display:block;box-sizing:content-box;max-width:none;margin:0 auto;padding:1.5ch 1ch;background:#fff;color:#111;font-family:ui-monospace,"Cascadia Mono","Sarasa Mono SC","Noto Sans Mono CJK SC","DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:13px;line-height:1.25;overflow:hidden;box-shadow:0 1px 4px rgba(0,0,0,.3);text-align:left;font-weight:400}
.paper-24{width:24ch}.paper-32{width:32ch}.paper-40{width:40ch}.paper-42{width:42ch}.paper-48{width:48ch}.paper-56{width:56ch}.paper-64{width:64ch}.paper-72{width:72ch}.paper-80{width:80ch}.paper-wide{width:max-content}
.paper .row{display:block;white-space:pre;min-height:1.25em;font-size:calc(var(--h,1)*1em);width:calc(var(--h,1)/var(--w,1)*100%);transform:scaleX(calc(var(--w,1)/var(--h,1)));transform-origin:0 0;overflow:visible}
.paper .w1{--w:1}.paper .w2{--w:2}.paper .w3{--w:3}.paper .w4{--w:4}.paper .w5{--w:5}.paper .w6{--w:6}.paper .w7{--w:7}.paper .w8{--w:8}
.paper .h1{--h:1}.paper .h2{--h:2}.paper .h3{--h:3}.paper .h4{--h:4}.paper .h5{--h:5}.paper .h6{--h:6}.paper .h7{--h:7}.paper .h8{--h:8}
.paper .al-c{text-align:center}.paper .al-r{text-align:right}
.paper .b{font-weight:700}.paper .u{text-decoration:underline}.paper .inv{background:#111;color:#fff}
.paper .sym{display:block;margin:.25em 0}
.paper .sym img{display:block;width:100%;height:auto;image-rendering:crisp-edges;image-rendering:pixelated}
.paper .hri{text-align:center}
.paper .mark{display:block;text-align:center;color:#666;font-style:italic;white-space:pre-wrap}
.paper .cut{display:block;margin:.75em -1ch;border-top:1px dashed #888;height:0;text-align:center;color:#888;line-height:0;overflow:visible}
.paper .cut span{background:#fff;padding:0 .5ch}
.paper .note{display:block;margin-top:.5em;color:#a00;white-space:pre-wrap;font-style:italic}
`

// widths are the paper-N classes CSS defines, narrowest first.
var widths = []int{24, 32, 40, 42, 48, 56, 64, 72, 80}
