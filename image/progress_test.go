package image

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// buildLog is the output of a real build of base (cut to a few lines of
// each kind), as BuildDebian passes it to its progress function.
const buildLog = `== debootstrap bookworm (minbase)
I: Retrieving InRelease
I: Checking Release signature
I: Valid Release signature (key id 4D64FEC119C2029067D6E791F8D2585B8783D481)
I: Retrieving Packages
I: Validating Packages
I: Resolving dependencies of required packages...
I: Checking component main on http://deb.debian.org/debian...
I: Retrieving adduser 3.134
I: Validating adduser 3.134
I: Validating apt 2.6.1
I: Validating base-files 12.4+deb12u15
I: Chosen extractor for .deb packages: dpkg-deb
I: Extracting adduser...
I: Extracting apt...
I: Installing core packages...
I: Unpacking required packages...
I: Unpacking adduser...
I: Configuring required packages...
I: Configuring apt...
Setting up base-files (12.4+deb12u15) ...
I: Unpacking the base system...
I: Base system installed successfully.
== apt-get install git python3
Reading package lists...
The following NEW packages will be installed:
  git python3 libpython3.11
0 upgraded, 3 newly installed, 0 to remove and 0 not upgraded.
Need to get 145 MB of archives.
Get:1 http://deb.debian.org/debian bookworm/main amd64 libpython3.11 amd64 3.11.2-6 [1 MB]
Get:2 http://deb.debian.org/debian bookworm/main amd64 python3 amd64 3.11.2-1+b1 [26.3 kB]
Get:3 http://deb.debian.org/debian bookworm/main amd64 git amd64 1:2.39.5-0+deb12u2 [7 MB]
Fetched 145 MB in 23s (6243 kB/s)
Selecting previously unselected package libpython3.11:amd64.
Preparing to unpack .../0-libpython3.11_3.11.2-6_amd64.deb ...
Unpacking libpython3.11:amd64 (3.11.2-6) ...
Unpacking python3 (3.11.2-1+b1) ...
Setting up libpython3.11:amd64 (3.11.2-6) ...
Setting up python3 (3.11.2-1+b1) ...
Processing triggers for libc-bin (2.36-9+deb12u14) ...
== setup (user user, /etc/hosts)
== storing the layer`

func TestProgressTracker(t *testing.T) {
	var tr ProgressTracker
	var got []BuildProgress
	for _, line := range strings.Split(buildLog, "\n") {
		if p, changed := tr.Line(line); changed {
			got = append(got, p)
		}
	}
	want := []BuildProgress{
		{Stage: "debootstrap"},
		// The index files (one word) are not packages; a package both
		// retrieved and validated counts once.
		{Stage: "debootstrap", Step: "downloading", Done: 1},
		{Stage: "debootstrap", Step: "downloading", Done: 2},
		{Stage: "debootstrap", Step: "downloading", Done: 3},
		// Extraction starts once every package is downloaded: that is the total.
		{Stage: "debootstrap", Step: "extracting", Done: 1, Total: 3},
		{Stage: "debootstrap", Step: "extracting", Done: 2, Total: 3},
		{Stage: "debootstrap", Step: "unpacking", Done: 1, Total: 3},
		{Stage: "debootstrap", Step: "configuring", Done: 1, Total: 3},
		// dpkg's own lines (debootstrap installs some packages with it) count too.
		{Stage: "debootstrap", Step: "configuring", Done: 2, Total: 3},
		{Stage: "apt-get"},
		{Stage: "apt-get", Total: 3},
		{Stage: "apt-get", Step: "downloading", Done: 1, Total: 3},
		{Stage: "apt-get", Step: "downloading", Done: 2, Total: 3},
		{Stage: "apt-get", Step: "downloading", Done: 3, Total: 3},
		{Stage: "apt-get", Step: "unpacking", Done: 1, Total: 3},
		{Stage: "apt-get", Step: "unpacking", Done: 2, Total: 3},
		{Stage: "apt-get", Step: "configuring", Done: 1, Total: 3},
		{Stage: "apt-get", Step: "configuring", Done: 2, Total: 3},
		{Stage: "setup"},
		{Stage: "layer"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}
	if p, changed := tr.Line("waiting for another build of base to finish"); !changed || p.Stage != "waiting" {
		t.Errorf("waiting line: %+v, changed %v", p, changed)
	}
}
