package e2b

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestFilesGzip: /files takes a gzip-encoded upload, and a read is
// gzip-encoded when the client accepts gzip and the file is at least
// compressMinBytes long; a 1 KiB file, a client that does not ask and one
// that refuses gzip (q=0) get the plain bytes. Reads in a row reuse the
// pooled compressor and each decodes to its own file.
func TestFilesGzip(t *testing.T) {
	e := newEnvdEnv(t)
	small := []byte(strings.Repeat("s", 1024))
	large := bytes.Repeat([]byte("large file line\n"), 4096) // 64 KiB
	other := bytes.Repeat([]byte("another line\n"), 2000)

	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	zw.Write(large)
	zw.Close()
	h := http.Header{"Content-Encoding": {"gzip"}}
	if status, body := e.upload(t, url.Values{"path": {"large.txt"}}, h, "application/octet-stream", zipped.Bytes()); status != 200 {
		t.Fatalf("gzip upload: %d %s", status, body)
	}
	for name, data := range map[string][]byte{"small.txt": small, "other.txt": other} {
		if status, body := e.upload(t, url.Values{"path": {name}}, nil, "application/octet-stream", data); status != 200 {
			t.Fatalf("upload %s: %d %s", name, status, body)
		}
	}

	// No transparent decompression: the test sees what was sent.
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	tests := []struct {
		name, file, accept string
		want               []byte
		gzipped            bool
	}{
		{"large, gzip accepted", "large.txt", "gzip, deflate, br", large, true},
		{"another large in a row", "other.txt", "br;q=1.0, gzip;q=0.8", other, true},
		{"large again", "large.txt", "GZIP", large, true},
		{"small, gzip accepted", "small.txt", "gzip, deflate", small, false},
		{"large, gzip refused", "large.txt", "gzip;q=0, identity", large, false},
		{"large, not asked", "large.txt", "", large, false},
		{"large, another coding", "large.txt", "br", large, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), "GET", e.url+"/files?path="+tc.file, nil)
			if err != nil {
				t.Fatal(err)
			}
			e.auth(req.Header)
			if tc.accept != "" {
				req.Header.Set("Accept-Encoding", tc.accept)
			}
			res, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			if res.StatusCode != 200 {
				b, _ := io.ReadAll(res.Body)
				t.Fatalf("read: %d %s", res.StatusCode, b)
			}
			if got := res.Header.Get("Vary"); got != "Accept-Encoding" {
				t.Errorf("Vary %q, want Accept-Encoding", got)
			}
			body := io.Reader(res.Body)
			if enc := res.Header.Get("Content-Encoding"); (enc == "gzip") != tc.gzipped || (enc != "" && enc != "gzip") {
				t.Fatalf("Content-Encoding %q, want gzip: %v", enc, tc.gzipped)
			} else if tc.gzipped {
				zr, err := gzip.NewReader(res.Body)
				if err != nil {
					t.Fatal(err)
				}
				body = zr
			}
			got, err := io.ReadAll(body)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tc.want) {
				t.Fatalf("read %d bytes, want the %d written", len(got), len(tc.want))
			}
		})
	}
}

// BenchmarkFilesWriteRead times envd's /files write then read of 1 KiB
// (files.write + files.read without the SDK) over HTTP keep-alive, and
// the two apart.
func BenchmarkFilesWriteRead(b *testing.B) {
	e := newEnvdEnv(b)
	data := bytes.Repeat([]byte("x"), 1024)
	do := func(req *http.Request) {
		e.auth(req.Header)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			b.Fatalf("%s: %d", req.Method, res.StatusCode)
		}
		if req.Method == "GET" && n != int64(len(data)) {
			b.Fatalf("read %d bytes", n)
		}
	}
	write := func(i int) {
		req, _ := http.NewRequest("POST", e.url+"/files?path=bench/"+strconv.Itoa(i%16), bytes.NewReader(data))
		req.Header.Set("Content-Type", "application/octet-stream")
		do(req)
	}
	read := func(i int) {
		req, _ := http.NewRequest("GET", e.url+"/files?path=bench/"+strconv.Itoa(i%16), nil)
		do(req)
	}
	for i := range 16 {
		write(i)
	}
	var w, r []time.Duration
	i := 0
	for b.Loop() {
		t0 := time.Now()
		write(i)
		t1 := time.Now()
		read(i)
		w, r = append(w, t1.Sub(t0)), append(r, time.Since(t1))
		i++
	}
	report := func(name string, d []time.Duration) {
		slices.Sort(d)
		b.ReportMetric(float64(d[len(d)/2].Microseconds()), name+"-p50-µs")
		b.ReportMetric(float64(d[len(d)*99/100].Microseconds()), name+"-p99-µs")
	}
	report("write", w)
	report("read", r)
}

// TestStartCompression: to a client that accepts gzip (connect-go's,
// E2B's Python SDK), a process event under compressMinBytes goes plain and
// a larger one compressed; both decode to the command's output.
func TestStartCompression(t *testing.T) {
	e := newEnvdEnv(t)
	for _, tc := range []struct {
		name, cmd string
		want      string
		gzipped   bool // the output's event
	}{
		{"small output", "echo hi", "hi\n", false},
		{"large output", "seq 1000", seqOutput(1000), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, _ := json.Marshal(map[string]any{"process": map[string]any{"cmd": "/bin/bash", "args": []string{"-l", "-c", tc.cmd}}})
			env := append([]byte{0, 0, 0, 0, 0}, body...)
			binary.BigEndian.PutUint32(env[1:5], uint32(len(body)))
			req, err := http.NewRequestWithContext(t.Context(), "POST", e.url+"/process.Process/Start", bytes.NewReader(env))
			if err != nil {
				t.Fatal(err)
			}
			e.auth(req.Header)
			req.Header.Set("Content-Type", "application/connect+json")
			req.Header.Set("Connect-Protocol-Version", "1")
			req.Header.Set("Connect-Accept-Encoding", "gzip")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			raw, _ := io.ReadAll(res.Body)
			var out strings.Builder
			sawGzip := false
			for len(raw) >= 5 {
				flags, n := raw[0], binary.BigEndian.Uint32(raw[1:5])
				msg := raw[5 : 5+n]
				raw = raw[5+n:]
				if flags&1 != 0 {
					zr, err := gzip.NewReader(bytes.NewReader(msg))
					if err != nil {
						t.Fatal(err)
					}
					msg, _ = io.ReadAll(zr)
				}
				var ev struct {
					Event struct {
						Data *struct{ Stdout []byte }
					}
				}
				json.Unmarshal(msg, &ev)
				if ev.Event.Data != nil {
					out.Write(ev.Event.Data.Stdout)
					sawGzip = sawGzip || flags&1 != 0
				} else if flags&1 != 0 && flags&2 == 0 {
					t.Errorf("a small event went compressed: %s", msg)
				}
			}
			if out.String() != tc.want || sawGzip != tc.gzipped {
				t.Errorf("output %d bytes (want %d), compressed: %v (want %v)", out.Len(), len(tc.want), sawGzip, tc.gzipped)
			}
		})
	}
}

func seqOutput(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString(strconv.Itoa(i) + "\n")
	}
	return b.String()
}
