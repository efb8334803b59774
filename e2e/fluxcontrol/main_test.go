//go:build e2e

package fluxcontrol

import (
	"testing"

	"github.com/throughline-dev/throughline/internal/testenv"
)

// throughline is the CLI built for this suite.
var throughline string

func TestMain(m *testing.M) { testenv.MainWithThroughline(m, &throughline) }
