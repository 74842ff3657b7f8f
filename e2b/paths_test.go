package e2b

import "testing"

func TestSandboxPath(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "/workspace"}, {"~", "/workspace"}, {"~/a", "/workspace/a"}, {"a/b", "/workspace/a/b"},
		{"/home/user", "/workspace"}, {"/home/user/x.txt", "/workspace/x.txt"}, {"/home/username", "/home/username"},
		{"/tmp/x", "/tmp/x"}, {"/home/user/../etc", "/home/etc"},
	} {
		if got := sandboxPath(tc.in); got != tc.want {
			t.Errorf("sandboxPath(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if got := e2bPath(sandboxPath(tc.in)); tc.want == "/workspace" && got != "/home/user" {
			t.Errorf("e2bPath(sandboxPath(%q)) = %q, want /home/user", tc.in, got)
		}
	}
}

func TestMetadataLabels(t *testing.T) {
	md := map[string]string{"sandboxTestId": "1", "a b/c": "2", "plain-key.x": "3"}
	labels, err := labelsOf(md)
	if err != nil {
		t.Fatal(err)
	}
	if labels["m.sandbox_54est_49d"] != "1" || labels["m.plain-key.x"] != "3" {
		t.Errorf("labelsOf(%v) = %v", md, labels)
	}
	got := metadataOf(labels)
	if len(got) != len(md) {
		t.Fatalf("metadataOf = %v, want %v", got, md)
	}
	for k, v := range md {
		if got[k] != v {
			t.Errorf("metadataOf: %q = %q, want %q", k, got[k], v)
		}
	}
	if _, ok := unmetaKey("m.bad_4"); ok {
		t.Error("unmetaKey accepted a truncated escape")
	}
}
