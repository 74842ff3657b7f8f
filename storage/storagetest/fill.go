package storagetest

import "io"

// Fill writes 1 MiB chunks of non-zero bytes to w until a write fails or
// max bytes are written, and returns the bytes written and the error: the
// way tests run a sandbox into its disk quota.
func Fill(w io.Writer, max int64) (int64, error) {
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i) // not zeros: btrfs would not compress them, but be safe
	}
	var n int64
	for n < max {
		k, err := w.Write(buf)
		n += int64(k)
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
