package container_test

import (
	"strings"
	"testing"

	"rung.dev/rung"
	"rung.dev/rung/agent"
	"rung.dev/rung/container"
	"rung.dev/rung/image"
	"rung.dev/rung/internal/testenv"
	"rung.dev/rung/storage/storagetest"
)

// debianWorkloads are what the built-in debian image is for. Each works
// offline (containers have no network yet): packages are built in the
// test. They are also the seccomp allow-list's compatibility check: apt
// and dpkg, pip in a venv, npm, gcc with threads, git, python and node
// with threads and child processes, reflinks on the btrfs pool.
var debianWorkloads = []struct {
	name string
	cmd  string   // run by the shell, unless argv is set
	argv []string // run as is
	want string   // stdout
}{
	{name: "apt-get install and remove of a local deb", cmd: `set -e
mkdir -p deb/DEBIAN deb/usr/bin
printf 'Package: rung-hello\nVersion: 1.0\nArchitecture: all\nMaintainer: rung <rung@example.com>\nDescription: rung test package\n' > deb/DEBIAN/control
printf '#!/bin/sh\necho hello from a deb\n' > deb/usr/bin/rung-hello
chmod 755 deb/usr/bin/rung-hello
dpkg-deb --build --root-owner-group deb rung-hello.deb >/dev/null
apt-get install -y -q ./rung-hello.deb >/dev/null
rung-hello
dpkg -l rung-hello | tail -1 | cut -c1-2
apt-get remove -y -q rung-hello >/dev/null
test -e /usr/bin/rung-hello || echo removed`, want: "hello from a deb\nii\nremoved\n"},
	// The venv has pip and setuptools but not wheel, which setuptools 66
	// needs to build a wheel: a directory installs by the legacy path, and
	// a wheel is made by hand.
	{name: "pip install of a local directory in a venv", cmd: `set -e
python3 -m venv v
mkdir -p hello/hello_rung
echo 'def greet(): return "hello from pip"' > hello/hello_rung/__init__.py
printf 'from setuptools import setup\nsetup(name="hello-rung", version="1.0", packages=["hello_rung"])\n' > hello/setup.py
v/bin/pip install -q --no-index --no-build-isolation --no-use-pep517 ./hello
v/bin/python -c 'import hello_rung; print(hello_rung.greet())'`, want: "hello from pip\n"},
	{name: "pip install of a local wheel in a venv", cmd: `set -e
python3 -m venv w
w/bin/python - <<'EOF'
import base64, hashlib, zipfile
files = {
    "hello_whl/__init__.py": 'def greet(): return "hello from a wheel"\n',
    "hello_whl-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: hello-whl\nVersion: 1.0\n",
    "hello_whl-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: rung-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
record = [name + ",sha256=" + base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode() + "," + str(len(text)) for name, text in files.items()]
with zipfile.ZipFile("hello_whl-1.0-py3-none-any.whl", "w") as z:
    for name, text in files.items():
        z.writestr(name, text)
    z.writestr("hello_whl-1.0.dist-info/RECORD", "\n".join(record + ["hello_whl-1.0.dist-info/RECORD,,"]) + "\n")
EOF
w/bin/pip install -q --no-index ./hello_whl-1.0-py3-none-any.whl
w/bin/python -c 'import hello_whl; print(hello_whl.greet())'`, want: "hello from a wheel\n"},
	{name: "npm install of a packed local package", cmd: `set -e
mkdir -p lib app
cd lib && npm init -y >/dev/null && echo 'module.exports = () => "hello from npm"' > index.js && npm pack --silent >/dev/null
cd ../app && npm init -y >/dev/null && npm install --offline --no-audit --no-fund --silent ../lib/lib-1.0.0.tgz
node -e 'console.log(require("lib")())'`, want: "hello from npm\n"},
	{name: "gcc with threads", cmd: `set -e
cat > t.c <<'EOF'
#include <pthread.h>
#include <stdio.h>
static void *twice(void *p) { *(int *)p *= 2; return NULL; }
int main(void) {
	pthread_t t[4];
	int v[4] = {1, 2, 3, 4}, sum = 0;
	for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, twice, &v[i]);
	for (int i = 0; i < 4; i++) { pthread_join(t[i], NULL); sum += v[i]; }
	printf("%d\n", sum);
	return 0;
}
EOF
gcc -O2 -pthread -o t t.c && ./t`, want: "20\n"},
	{name: "make", cmd: `printf 'all:\n\t@echo made\n' > Makefile && make`, want: "made\n"},
	{name: "git", cmd: "git init -q r && cd r && echo a > f && git add f && git -c user.email=a@b -c user.name=a commit -q -m x && git log --format=%s", want: "x\n"},
	{name: "python threads, subprocess and multiprocessing", argv: []string{"python3", "-c", `import concurrent.futures, multiprocessing, subprocess
with concurrent.futures.ThreadPoolExecutor(4) as ex:
    print(sum(ex.map(lambda x: x * x, range(10))))
print(subprocess.run(["echo", "child"], capture_output=True, text=True).stdout, end="")
if __name__ == "__main__":
    with multiprocessing.Pool(2) as p:
        print(sum(p.map(abs, [-1, -2, -3])))`}, want: "285\nchild\n6\n"},
	{name: "node worker_threads and child_process", argv: []string{"node", "-e", `const { Worker } = require("worker_threads");
const cp = require("child_process");
const w = new Worker("require('worker_threads').parentPort.postMessage(6 * 7)", { eval: true });
w.on("message", (m) => {
  console.log("worker", m);
  console.log(cp.execFileSync("echo", ["child"]).toString().trim());
});`}, want: "worker 42\nchild\n"},
	{name: "npm", cmd: "npm --version >/dev/null && echo ok", want: "ok\n"},
	{name: "cp --reflink", cmd: "head -c 1048576 /dev/urandom > big && cp --reflink=always big big2 && cmp big big2 && echo same", want: "same\n"},
	{name: "ca-certificates", cmd: "test -s /etc/ssl/certs/ca-certificates.crt && echo ok", want: "ok\n"},
	{name: "curl", cmd: "curl --version | head -c 4", want: "curl"},
	{name: "procps", cmd: "ps -o comm= -p 1", want: "rung\n"},
}

// TestDebianImageTools runs debianWorkloads in the built-in debian image
// under runc and crun, the runtimes that load the seccomp allow-list, in
// a sandbox on a btrfs pool as in the daemon. The image is the one `rung
// image build debian` makes (minbase plus image.DebianPackages), built
// once into the test cache (the first build downloads a few hundred
// packages: 70 s here).
func TestDebianImageTools(t *testing.T) {
	testenv.Require(t, "root", "runc", "debootstrap")
	if testing.Short() {
		t.Skip("builds a Debian image with debootstrap")
	}
	pool := storagetest.NewTestPool(t)
	images, err := image.Open(debianCache, nil)
	if err != nil {
		t.Fatal(err)
	}
	im, err := images.Get("debian-full")
	if err != nil {
		im, err = images.BuildDebian(t.Context(), image.DebianConfig{Name: "debian-full"}, func(line string) { t.Log(line) })
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, rt := range profileRuntimes(t) {
		t.Run(rt.Name, func(t *testing.T) {
			m := newManager(t, images, rt, agentBinary(t))
			id := rung.NewSandboxID()
			if err := pool.Create(t.Context(), string(id)); err != nil {
				t.Fatal(err)
			}
			c, err := m.Start(t.Context(), container.StartRequest{Sandbox: id, Subvolume: pool.Path(string(id)), Image: im, Size: rung.Presets["standard-1"]})
			if err != nil {
				t.Fatal(err)
			}
			for _, tc := range debianWorkloads {
				t.Run(tc.name, func(t *testing.T) {
					o := run(t, c, agent.ExecRequest{Command: tc.cmd, Argv: tc.argv, TimeoutMS: 120000})
					if o.stdout != tc.want || o.exit.Code != 0 {
						t.Errorf("stdout %q (want %q), exit %+v, stderr %s", o.stdout, tc.want, o.exit, strings.TrimSpace(o.stderr))
					}
				})
			}
		})
	}
}
