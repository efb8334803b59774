package testenv

import "testing"

func TestDockerPullableImageID(t *testing.T) {
	const d = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, tc := range []struct{ image, want string }{
		{"ghcr.io/org/app@" + d, "docker-pullable://ghcr.io/org/app@" + d},
		{"ghcr.io/org/app:1.4.2@" + d, "docker-pullable://ghcr.io/org/app@" + d},
		{"127.0.0.1:5001/demo/app:v1@" + d, "docker-pullable://127.0.0.1:5001/demo/app@" + d},
		{"127.0.0.1:5001/demo/app@" + d, "docker-pullable://127.0.0.1:5001/demo/app@" + d},
		{"ghcr.io/org/app:1.4.2", ""},
		{"app", ""},
	} {
		if got := DockerPullableImageID(tc.image); got != tc.want {
			t.Errorf("DockerPullableImageID(%q) = %q, want %q", tc.image, got, tc.want)
		}
	}
}
