package cmp

import (
	"sort"
	"strings"

	"github.com/throughline-dev/throughline/render"
)

// Argo CD's build environment, as set by argocd-repo-server for plugins.
const (
	EnvAppName         = "ARGOCD_APP_NAME"
	EnvAppNamespace    = "ARGOCD_APP_NAMESPACE"
	EnvAppRevision     = "ARGOCD_APP_REVISION"
	EnvAppSourcePath   = "ARGOCD_APP_SOURCE_PATH"
	EnvAppSourceRepo   = "ARGOCD_APP_SOURCE_REPO_URL"
	EnvKubeVersion     = "KUBE_VERSION"
	EnvKubeAPIVersions = "KUBE_API_VERSIONS"
	// EnvAppParameters holds the plugin parameters as JSON (the Helm
	// parameters of a chart app are read from it: render.ParseHelmParameters).
	EnvAppParameters = render.EnvAppParameters
	// EnvPluginPrefix prefixes the Application's spec.source.plugin.env.
	EnvPluginPrefix = "ARGOCD_ENV_"
	// EnvParamPrefix prefixes the Application's plugin parameters.
	EnvParamPrefix = "PARAM_"
)

// Parameter names throughline reads (from ARGOCD_ENV_<NAME> or PARAM_<NAME>).
const (
	ParamEnvironment = "ENVIRONMENT"
	ParamApp         = "APP"
)

// Env is the build environment of one generate call.
type Env struct {
	AppName      string
	AppNamespace string
	// Revision (ARGOCD_APP_REVISION) is logged only: the output is a pure
	// function of the app's files, never of the commit they came from.
	Revision        string
	SourcePath      string
	RepoURL         string
	KubeVersion     string
	KubeAPIVersions string
	// AppParameters is ARGOCD_APP_PARAMETERS as given.
	AppParameters string
	// Params holds the plugin env and parameters, prefix stripped, names
	// upper-cased. A parameter wins over a plugin env entry of the same name.
	Params map[string]string
}

// EnvFromEnviron reads an Env from KEY=VALUE pairs (os.Environ()).
func EnvFromEnviron(environ []string) Env {
	e := Env{Params: map[string]string{}}
	plugin := map[string]string{}
	params := map[string]string{}
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		switch {
		case k == EnvAppName:
			e.AppName = v
		case k == EnvAppNamespace:
			e.AppNamespace = v
		case k == EnvAppRevision:
			e.Revision = v
		case k == EnvAppSourcePath:
			e.SourcePath = v
		case k == EnvAppSourceRepo:
			e.RepoURL = v
		case k == EnvKubeVersion:
			e.KubeVersion = v
		case k == EnvKubeAPIVersions:
			e.KubeAPIVersions = v
		case k == EnvAppParameters:
			e.AppParameters = v
		case strings.HasPrefix(k, EnvPluginPrefix):
			plugin[strings.ToUpper(strings.TrimPrefix(k, EnvPluginPrefix))] = v
		case strings.HasPrefix(k, EnvParamPrefix):
			params[strings.ToUpper(strings.TrimPrefix(k, EnvParamPrefix))] = v
		}
	}
	for k, v := range plugin {
		e.Params[k] = v
	}
	for k, v := range params {
		e.Params[k] = v
	}
	return e
}

// Param returns a parameter by name (case-insensitive).
func (e Env) Param(name string) string { return e.Params[strings.ToUpper(name)] }

// fingerprint lists everything of the environment that can change a render's
// output. The revision is not one of them (the output never names it): a new
// commit elsewhere in the repository must still hit the cache.
func (e Env) fingerprint() []string {
	out := []string{
		EnvAppName + "=" + e.AppName,
		EnvAppNamespace + "=" + e.AppNamespace,
		EnvAppSourcePath + "=" + e.SourcePath,
		EnvAppSourceRepo + "=" + e.RepoURL,
		EnvKubeVersion + "=" + e.KubeVersion,
		EnvKubeAPIVersions + "=" + e.KubeAPIVersions,
		EnvAppParameters + "=" + e.AppParameters,
	}
	keys := make([]string, 0, len(e.Params))
	for k := range e.Params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, "param:"+k+"="+e.Params[k])
	}
	return out
}

// Helm is what the Application says about the Helm parameters of a chart
// app: its plugin parameters (ARGOCD_APP_PARAMETERS) named as Argo CD's Helm
// source names them, and its destination namespace. The render takes the
// parameters from the app's file in Git (render.HelmParametersFile) and
// refuses these when they disagree with it; the Application's name and
// the cluster's KUBE_VERSION and KUBE_API_VERSIONS are not used, so the
// plugin renders what `throughline render` and the gates render.
func (e Env) Helm() (render.HelmOptions, error) {
	h, err := render.ParseHelmParameters([]byte(e.AppParameters))
	if err != nil {
		return h, err
	}
	h.Destination = e.AppNamespace
	return h, nil
}
