// Builds dist/extension-throughline.js, the Argo CD UI extension, with
// esbuild. Argo CD provides React: the bundle takes react, react-dom and
// react/jsx-runtime from the host's window.React, window.ReactDOM and
// window.ReactJSXRuntime (Argo CD 3.5 refuses a bundle that carries its own
// JSX runtime), so it holds none of React's code.
//
// It also builds dist/testhost.js, which is NOT shipped: for the browser
// test's stand-in of Argo CD's page, it puts the npm packages' React 19,
// ReactDOM and JSX runtime on window as Argo CD does.
import * as esbuild from 'esbuild';

const globals = {
  'react': 'React',
  'react-dom': 'ReactDOM',
  'react-dom/client': 'ReactDOM',
  'react/jsx-runtime': 'ReactJSXRuntime',
};

// hostReact resolves the modules Argo CD provides to its globals.
const hostReact = {
  name: 'argocd-host-react',
  setup(build) {
    const filter = new RegExp('^(' + Object.keys(globals).map(k => k.replace(/[/-]/g, '\\$&')).join('|') + ')$');
    build.onResolve({filter}, args => ({path: args.path, namespace: 'argocd-host'}));
    build.onLoad({filter: /.*/, namespace: 'argocd-host'}, args => ({
      contents: `module.exports = window.${globals[args.path]};`,
      loader: 'js',
    }));
  },
};

const common = {bundle: true, format: 'iife', target: ['es2020'], legalComments: 'none', logLevel: 'warning'};

await esbuild.build({
  ...common,
  entryPoints: ['src/extension.jsx'],
  outfile: 'dist/extension-throughline.js',
  jsx: 'automatic',
  minify: true,
  plugins: [hostReact],
});

await esbuild.build({
  ...common,
  entryPoints: ['testhost/host.js'],
  outfile: 'dist/testhost.js',
  define: {'process.env.NODE_ENV': '"production"'},
  minify: true,
});
