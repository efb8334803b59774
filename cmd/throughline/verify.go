package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/health"
)

// kubeFlags locate the cluster: a kubeconfig (--kubeconfig, $KUBECONFIG,
// ~/.kube/config) or, without one, the in-cluster service account.
type kubeFlags struct {
	kubeconfig string
	context    string
}

func (k *kubeFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&k.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, else in-cluster)")
	f.StringVar(&k.context, "context", "", "kubeconfig context (default: the current one)")
}

func (k *kubeFlags) config() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if k.kubeconfig != "" {
		rules.ExplicitPath = k.kubeconfig
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: k.context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubernetes client configuration: %w", err)
	}
	cfg.UserAgent = "throughline/" + buildVersion()
	return cfg, nil
}

// client is a controller-runtime client of the cluster with client-go's
// scheme.
func (k *kubeFlags) client() (client.Client, error) {
	cfg, err := k.config()
	if err != nil {
		return nil, err
	}
	scheme, err := kubeScheme()
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("kubernetes client for %s: %w", cfg.Host, err)
	}
	return c, nil
}

func kubeScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("kubernetes scheme: %w", err)
	}
	return s, nil
}

const verifyLong = `Run the verifier of 'throughline serve' once on one Acceptance: wait for nothing
but the cluster's current state, find the workloads it names, check that their
rollout is complete (only Pods of the current revision), and compare every
container's imageID with the declared digest (exact, the index child for the
node's platform, or that child's config digest). Nothing is written.

Made for an Argo CD PostSync hook Job (in-cluster credentials) or a person
(kubeconfig). --wait keeps asking while the answer is "not decided yet".

Exit codes: 0 verified, 3 an image does not match, 4 the Acceptance does not
exist or is invalid, 5 not decided (rollout in progress, workload not found,
registry unreachable: try again).`

// verifyOptions are the flags of throughline verify.
type verifyOptions struct {
	kf                 kubeFlags
	rf                 registryFlags
	namespace, name    string
	output             string
	wait, pollInterval time.Duration
}

func (o *verifyOptions) addFlags(f *pflag.FlagSet) {
	f.StringVarP(&o.namespace, "namespace", "n", "", "namespace of the Acceptance (required)")
	f.StringVar(&o.name, "acceptance", "", "name of the Acceptance (required)")
	outputFlag(f, &o.output, "output format: text or json", "text", "json")
	f.DurationVar(&o.wait, "wait", 0, "keep asking this long while the verdict is pending or unverifiable")
	f.DurationVar(&o.pollInterval, "poll-interval", 5*time.Second, "pause between two checks with --wait")
}

func newVerifyCommand(g *globals, stdout io.Writer) *cobra.Command {
	var o verifyOptions
	cmd := leaf(&cobra.Command{
		Use:   "verify --namespace NS --acceptance NAME",
		Short: "Verify once that the cluster runs the images an Acceptance declares",
		Long:  verifyLong,
		Example: `  throughline verify -n shop --acceptance checkout
  throughline verify -n shop --acceptance checkout -o json --wait 5m`,
	}, o.addFlags, func(ctx context.Context, _ []string) error { return o.run(ctx, g, stdout) })
	o.kf.add(cmd)
	o.rf.add(cmd)
	return cmd
}

func (o *verifyOptions) run(ctx context.Context, g *globals, stdout io.Writer) error {
	if o.namespace == "" || o.name == "" {
		return exitcode.Usagef("--namespace and --acceptance are required")
	}
	if o.pollInterval <= 0 {
		return exitcode.Usagef("--poll-interval %s: want > 0", o.pollInterval)
	}
	v, err := o.verifier()
	if err != nil {
		return err
	}
	key := client.ObjectKey{Namespace: o.namespace, Name: o.name}
	rep, err := v.Await(ctx, key, o.wait, o.pollInterval, func(rep *health.Report) {
		g.log.Debug().Str("acceptance", key.String()).Str("reason", rep.Reason).Msg(rep.Message)
	})
	if err != nil {
		return err
	}
	write := rep.WriteText
	if o.output == "json" {
		write = func(w io.Writer) error { return writeJSON(w, rep) }
	}
	if err := write(stdout); err != nil {
		return err
	}
	return rep.Err()
}

// verifier connects to the cluster and the registries.
func (o *verifyOptions) verifier() (*health.Verifier, error) {
	c, err := o.kf.client()
	if err != nil {
		return nil, err
	}
	reg, err := o.rf.client()
	if err != nil {
		return nil, err
	}
	return &health.Verifier{Client: c, Registry: reg}, nil
}
