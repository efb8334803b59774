// The host's React, as Argo CD's UI puts it on window for its extensions
// (for the browser test's stand-in page only; never shipped).
import * as React from 'react';
import * as ReactDOM from 'react-dom';
import * as ReactDOMClient from 'react-dom/client';
import * as ReactJSXRuntime from 'react/jsx-runtime';

window.React = React;
window.ReactDOM = {...ReactDOM, ...ReactDOMClient};
window.ReactJSXRuntime = ReactJSXRuntime;
