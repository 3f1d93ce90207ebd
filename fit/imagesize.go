package fit

// imageSize reads the width and height of an inline PNG, GIF, WebP or
// JPEG image from its base64 data, decoding only the bytes of its header
// (no allocation). ok is false for anything else.
func imageSize(data string) (w, h int, ok bool) {
	var b [30]byte
	n := b64Read(data, 0, b[:])
	switch {
	case n >= 24 && string(b[:8]) == "\x89PNG\r\n\x1a\n" && string(b[12:16]) == "IHDR":
		return be32(b[16:]), be32(b[20:]), true
	case n >= 10 && string(b[:4]) == "GIF8":
		return le16(b[6:]), le16(b[8:]), true
	case n >= 30 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		switch string(b[12:16]) {
		case "VP8 ":
			return le16(b[26:]) & 0x3FFF, le16(b[28:]) & 0x3FFF, true
		case "VP8L":
			v := int(b[21]) | int(b[22])<<8 | int(b[23])<<16 | int(b[24])<<24
			return v&0x3FFF + 1, v>>14&0x3FFF + 1, true
		case "VP8X":
			return le24(b[24:]) + 1, le24(b[27:]) + 1, true
		}
	case n >= 4 && b[0] == 0xFF && b[1] == 0xD8:
		return jpegSize(data)
	}
	return 0, 0, false
}

// jpegSize walks a JPEG's segments to its frame header (SOFn), at most
// 64 segments.
func jpegSize(data string) (w, h int, ok bool) {
	off := 2
	var b [9]byte
	for range 64 {
		if b64Read(data, off, b[:4]) < 4 || b[0] != 0xFF {
			return 0, 0, false
		}
		marker := b[1]
		if marker == 0xFF { // fill byte
			off++
			continue
		}
		size := int(b[2])<<8 | int(b[3])
		if marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC {
			if b64Read(data, off, b[:9]) < 9 {
				return 0, 0, false
			}
			return int(b[7])<<8 | int(b[8]), int(b[5])<<8 | int(b[6]), true
		}
		if size < 2 {
			return 0, 0, false
		}
		off += 2 + size
	}
	return 0, 0, false
}

// wavByteRate returns the byte rate of a canonical WAV header, or 0.
func wavByteRate(data string) int {
	var b [32]byte
	if b64Read(data, 0, b[:]) < 32 || string(b[:4]) != "RIFF" || string(b[8:16]) != "WAVEfmt " {
		return 0
	}
	return le32(b[28:])
}

// b64Read decodes bytes off.. of the standard base64 data into dst and
// returns how many it decoded: fewer at the end of the data or at a byte
// that is not base64.
func b64Read(data string, off int, dst []byte) int {
	n := 0
	for q := off / 3 * 4; n < len(dst) && q+4 <= len(data); q += 4 {
		var v uint32
		pad := 0
		for i := range 4 {
			c := data[q+i]
			d := b64Value(c)
			switch {
			case c == '=' && i >= 2:
				pad++
				d = 0
			case d < 0 || pad > 0:
				return n
			}
			v = v<<6 | uint32(d)
		}
		triple := [3]byte{byte(v >> 16), byte(v >> 8), byte(v)}
		for i := range 3 - pad {
			if pos := q/4*3 + i; pos >= off && n < len(dst) {
				dst[n] = triple[i]
				n++
			}
		}
		if pad > 0 {
			break
		}
	}
	return n
}

func b64Value(c byte) int {
	switch {
	case c >= 'A' && c <= 'Z':
		return int(c - 'A')
	case c >= 'a' && c <= 'z':
		return int(c-'a') + 26
	case c >= '0' && c <= '9':
		return int(c-'0') + 52
	case c == '+':
		return 62
	case c == '/':
		return 63
	}
	return -1
}

func be32(b []byte) int { return int(b[0])<<24 | int(b[1])<<16 | int(b[2])<<8 | int(b[3]) }
func le32(b []byte) int { return int(b[0]) | int(b[1])<<8 | int(b[2])<<16 | int(b[3])<<24 }
func le16(b []byte) int { return int(b[0]) | int(b[1])<<8 }
func le24(b []byte) int { return int(b[0]) | int(b[1])<<8 | int(b[2])<<16 }
