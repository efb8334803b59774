// throughline's Argo CD UI extension: a status-panel item saying where the
// Application's promotion stands ("<digest> accepted", "awaiting 1 of 2
// approvals", "halted: <reason>"), and an Application tab with the app's
// chain: every environment, the nine arrows with the evidence each rests
// on, the approvals, what the environment accepted before.
//
// Everything comes from throughline serve's read-only JSON API through
// Argo CD's proxy extension (argocd-server checks the user's session and
// RBAC, then forwards /extensions/throughline/<path> to serve): the
// extension judges nothing itself. React is Argo CD's (build.mjs).
import {useEffect, useState} from 'react';

// API is the proxy extension's path relative to Argo CD's base href:
// argocd-server --rootpath/--basehref /argo serves it at
// /argo/extensions/throughline/..., and its index.html says <base href="/argo/">.
const API = 'extensions/throughline/api/v1/application';

// apiPath is API under the page's base (document.baseURI: Argo CD's
// <base href>, "/" by default).
export function apiPath(base) {
  return new URL(API, base || '/').pathname;
}
const REFRESH_MS = 30000;

const LABEL_APP = 'throughline.dev/app';
const LABEL_ENV = 'throughline.dev/environment';

// query is what the API is asked for an Application: its
// throughline.dev/app and throughline.dev/environment labels (or
// annotations); without an environment, nothing, and serve reads the
// Application's name (Argocd-Application-Name) as <app>-<environment>.
export function query(app) {
  const meta = (app && app.metadata) || {};
  const labels = meta.labels || {};
  const notes = meta.annotations || {};
  const env = labels[LABEL_ENV] || notes[LABEL_ENV] || '';
  if (!env) {
    return '';
  }
  const name = labels[LABEL_APP] || notes[LABEL_APP] || meta.name || '';
  return '?app=' + encodeURIComponent(name) + '&env=' + encodeURIComponent(env);
}

// useStatus fetches the Application's status, again every REFRESH_MS.
function useStatus(app) {
  const meta = (app && app.metadata) || {};
  const key = (meta.namespace || '') + ':' + (meta.name || '');
  const project = (app && app.spec && app.spec.project) || 'default';
  const url = apiPath(document.baseURI) + query(app);
  const [state, setState] = useState({loading: true});
  useEffect(() => {
    let stopped = false;
    const load = () =>
      fetch(url, {
        credentials: 'same-origin',
        headers: {'Argocd-Application-Name': key, 'Argocd-Project-Name': project, 'Accept': 'application/json'},
      })
        .then(async resp => {
          let body = null;
          try {
            body = await resp.json();
          } catch (e) {
            body = null;
          }
          if (!resp.ok) {
            throw new Error((body && body.error) || 'HTTP ' + resp.status);
          }
          return body;
        })
        .then(
          data => !stopped && setState({data}),
          err => !stopped && setState({error: String((err && err.message) || err)}),
        );
    load();
    const timer = setInterval(load, REFRESH_MS);
    return () => {
      stopped = true;
      clearInterval(timer);
    };
  }, [url, key, project]);
  return state;
}

const COLORS = {proven: '#18be94', pending: '#f4c030', broken: '#e96d76', none: '#8fa4b1'};
const WORDS = {proven: 'proven', pending: 'pending', broken: 'broken'};

function Tone({tone}) {
  return <i className={'throughline-tone throughline-tone--' + tone} aria-hidden='true'
    style={{display: 'inline-block', width: '0.7em', height: '0.7em', borderRadius: '50%', marginRight: '0.4em', background: COLORS[tone] || COLORS.none}} />;
}

function short(s) {
  if (!s) {
    return '';
  }
  const i = s.indexOf(':');
  return i > 0 && s.length > i + 13 ? s.slice(0, i + 13) : s.length === 40 ? s.slice(0, 12) : s;
}

// StatusPanel is the status-panel item: the cell in one line.
function StatusPanel({application, openFlyout}) {
  const {data, error, loading} = useStatus(application);
  if (loading) {
    return <div className='throughline-status'>reading the chain…</div>;
  }
  if (error) {
    return <div className='throughline-status throughline-status--error'>throughline: {error}</div>;
  }
  return (
    <div className='throughline-status' data-tone={data.tone}>
      <div className='application-status-panel__item-value'>
        <Tone tone={data.tone} />
        <span className='throughline-status__text'>{data.status}</span>
      </div>
      <div className='application-status-panel__item-name'>
        {data.environment}
        {data.cell && data.cell.tag ? ' · ' + data.cell.tag : ''}
        {openFlyout ? (
          <>
            {' · '}
            <a className='throughline-status__more' href='#' role='button'
              onClick={e => {
                e.preventDefault();
                openFlyout();
              }}>
              chain
            </a>
          </>
        ) : null}
      </div>
    </div>
  );
}

function Facts({facts}) {
  if (!facts || facts.length === 0) {
    return null;
  }
  return (
    <dl className='throughline-facts' style={{margin: '0.3em 0 0 1.1em', display: 'grid', gridTemplateColumns: 'max-content auto', gap: '0 1em'}}>
      {facts.map((f, i) => (
        <div key={i} style={{display: 'contents'}}>
          <dt style={{color: '#6d7f8b'}}>{f.label}</dt>
          <dd style={{margin: 0, fontFamily: 'monospace', wordBreak: 'break-all'}}>
            {f.url ? <a href={f.url} target='_blank' rel='noopener noreferrer'>{f.value}</a> : f.value}
          </dd>
        </div>
      ))}
    </dl>
  );
}

function Pods({pods}) {
  if (!pods || pods.length === 0) {
    return null;
  }
  return (
    <table className='throughline-pods' style={{margin: '0.3em 0 0 1.1em'}}>
      <thead>
        <tr><th scope='col'>Pod</th><th scope='col'>container</th><th scope='col'>imageID</th><th scope='col'>outcome</th></tr>
      </thead>
      <tbody>
        {pods.map((p, i) => (
          <tr key={i}>
            <td>{p.pod}</td>
            <td>{p.container}</td>
            <td style={{fontFamily: 'monospace'}}>{short(p.imageID.split('@').pop())}</td>
            <td>{p.outcome}{p.match ? ' ' + p.match : ''}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

// Pull is an attempt's open pull/merge request (serve with --forge): its
// label linking to the forge, state and approvals there, what it waits
// on, its title as text.
function Pull({pr}) {
  if (!pr) {
    return null;
  }
  return (
    <span className='throughline-pull'>
      {'; '}
      {pr.url ? <a href={pr.url} target='_blank' rel='noopener noreferrer'>{pr.label}</a> : pr.label}
      {' (' + pr.review + ')'}
      {pr.waits ? ', ' + pr.waits : ''}
      {': '}
      <q>{pr.title}</q>
    </span>
  );
}

// Chain is the Application tab (and the status panel's flyout): the app
// in every environment, then this environment's record and its arrows.
function Chain({application}) {
  const {data, error, loading} = useStatus(application);
  if (loading) {
    return <div className='throughline-chain'>reading the chain…</div>;
  }
  if (error) {
    return <div className='throughline-chain throughline-chain--error'>throughline: {error}</div>;
  }
  const chain = data.chain;
  return (
    <div className='throughline-chain' style={{padding: '1em', lineHeight: 1.5}}>
      <h3 className='throughline-chain__title'>
        {data.app} in {data.environment}: <Tone tone={data.tone} />
        <span className='throughline-chain__status'>{data.status}</span>
      </h3>
      <p style={{color: '#6d7f8b'}}>
        read from {data.base} at <code>{short(data.revision)}</code>
        {data.cell && data.cell.age ? ', in its state for ' + data.cell.age : ''}
        {data.cell && data.cell.deadline ? ', ' + data.cell.deadline : ''}
      </p>
      <h4>Environments</h4>
      <ol className='throughline-pipeline' style={{display: 'flex', gap: '1.5em', listStyle: 'none', padding: 0, flexWrap: 'wrap'}}>
        {data.pipeline.map(s => (
          <li key={s.environment} className={'throughline-stage' + (s.environment === data.environment ? ' throughline-stage--current' : '')}
            style={{fontWeight: s.environment === data.environment ? 'bold' : 'normal'}}>
            <Tone tone={s.tone} />
            {s.environment}: {s.tag ? s.tag + ' ' : ''}{s.status}
          </li>
        ))}
      </ol>
      {data.inFlight && data.inFlight.length > 0 ? (
        <>
          <h4>In flight</h4>
          <ul className='throughline-flights'>
            {data.inFlight.map(f => (
              <li key={f.branch}>
                <code>{f.branch}</code>: {f.state} {f.tag} <code>{short(f.digest)}</code>, {f.status}
                <Pull pr={f.pullRequest} />
              </li>
            ))}
          </ul>
          {data.pullRequestsUnavailable ? (
            <p className='throughline-pulls-unavailable' style={{color: '#5c4300', fontWeight: 600}}>{data.pullRequestsUnavailable}</p>
          ) : null}
        </>
      ) : null}
      {chain ? (
        <>
          <h4>
            Chain of {chain.promotionId}: {chain.verdict}, {chain.proven}/{chain.arrows.length} proven
          </h4>
          <ol className='throughline-arrows' style={{paddingLeft: '1.2em'}}>
            {chain.arrows.map((a, i) => (
              <li key={i} id={'throughline-arrow-' + (i + 1)} className={'throughline-arrow throughline-arrow--' + a.status} style={{marginBottom: '0.6em'}}>
                <Tone tone={a.status} />
                <strong>{a.name}</strong> <span className='throughline-arrow__status'>{WORDS[a.status] || a.status}</span>
                <div className='throughline-arrow__summary'>{a.summary}</div>
                <Facts facts={a.facts} />
                <Pods pods={a.pods} />
              </li>
            ))}
          </ol>
          <h4>Approvals ({(chain.approvals || []).length} of {chain.requiredApprovals} required)</h4>
          <ul className='throughline-approvals'>
            {(chain.approvals || []).map((a, i) => (
              <li key={i}>
                {a.approver}, {a.approvedAt}{a.expired ? ' (expired)' : ''}
              </li>
            ))}
          </ul>
        </>
      ) : (
        <p className='throughline-nochain'>No promotion record of {data.app} in {data.environment} on {data.base}.</p>
      )}
      {data.accepted && data.accepted.length > 0 ? (
        <>
          <h4>Accepted in {data.environment} with evidence</h4>
          <table className='throughline-accepted'>
            <thead>
              <tr><th scope='col'>digest</th><th scope='col'>tag</th><th scope='col'>promotion</th><th scope='col'>rollback --to</th></tr>
            </thead>
            <tbody>
              {data.accepted.map(c => (
                <tr key={c.promotionId}>
                  <td><code>{short(c.digest)}</code></td>
                  <td>{c.tag}</td>
                  <td>{c.promotionId}</td>
                  <td>{c.refused || 'may be picked'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      ) : null}
    </div>
  );
}

((window) => {
  const api = window.extensionsAPI;
  if (!api) {
    return;
  }
  api.registerStatusPanelExtension(StatusPanel, 'Promotion', 'throughline', Chain);
  api.registerResourceExtension(Chain, 'argoproj.io', 'Application', 'Promotion chain', {icon: 'fa fa-link'});
})(window);
