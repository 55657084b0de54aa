import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { LocationProvider, Route, Router, useLocation } from 'preact-iso';
import { get } from './api.ts';
import { NotFound } from './components/not-found.tsx';
import { Loading } from './components/ui.tsx';
import { AnalyticsPage } from './pages/analytics/index.tsx';
import { DatasetPage } from './pages/dataset.tsx';
import { DatasetList } from './pages/dataset-list.tsx';
import { DatasetNew } from './pages/dataset-new.tsx';
import { EndpointPage } from './pages/endpoint/index.tsx';
import { EndpointList } from './pages/endpoint-list.tsx';
import { EndpointNew } from './pages/endpoint-new.tsx';
import { Login } from './pages/login.tsx';
import { ModelPage } from './pages/model.tsx';
import { ModelList } from './pages/model-list.tsx';
import { ModelNew } from './pages/model-new.tsx';
import { Overview } from './pages/overview.tsx';
import { SettingsPage } from './pages/settings/index.tsx';
import { Setup } from './pages/setup.tsx';
import { session } from './session.ts';
import type { Me, SetupStatus } from './views.ts';

/**
 * The console: the first run offers the owner's account (no user yet), later visits log in; the pages
 * (their addresses are the server's list in src/console/routes.ts) need a token, and any 401 brings the
 * login page back, with the page to return to.
 */

export function App() {
  return (
    <LocationProvider>
      <Gate />
    </LocationProvider>
  );
}

const PUBLIC_PAGES = new Set(['/login', '/setup']);

function Gate() {
  const { path, url, query, route } = useLocation();
  const [status, setStatus] = useState<SetupStatus | undefined>(undefined);
  const [statusError, setStatusError] = useState<string | undefined>(undefined);
  const [me, setMe] = useState<Me | undefined>(undefined);
  const token = session.token.value;

  const loadStatus = () =>
    get<SetupStatus>('/auth/setup', { anonymous: true })
      .then((found) => setStatus(found))
      .catch((error) => setStatusError(String(error.message ?? error)));

  useEffect(() => {
    void loadStatus();
  }, []);

  useEffect(() => {
    setMe(undefined);
    if (!token) return;
    let current = true;
    get<Me>('/auth/me')
      .then((found) => {
        if (!current) return;
        session.email.value = found.email;
        setMe(found);
      })
      // A 401 has ended the session already (back to the login page); anything else is shown.
      .catch((error) => current && error.status !== 401 && setStatusError(String(error.message ?? error)));
    return () => {
      current = false;
    };
  }, [token]);

  // Where the person must be: the first run's page, the login page, or where they were going.
  useEffect(() => {
    if (!status) return;
    const destination = redirectFor(status, Boolean(token), path, url, query.next);
    if (destination !== undefined) route(destination, true);
  }, [status, token, path]);

  if (statusError) {
    return (
      <main class="center">
        <p role="alert">knode did not answer: {statusError}. Is it still running?</p>
      </main>
    );
  }
  if (!status) return <Loading />;

  if (!token) {
    return (
      <SignedOut
        status={status}
        path={path}
        onSetupDone={() => {
          void loadStatus();
        }}
      />
    );
  }
  if (!me) return <Loading what="your account" />;
  return (
    <Layout me={me}>
      <Router>
        <Route path="/" component={Overview} />
        <Route path="/datasets" component={DatasetList} />
        <Route path="/datasets/new" component={DatasetNew} />
        <Route path="/datasets/:id" component={DatasetPage} />
        <Route path="/models" component={ModelList} />
        <Route path="/models/new" component={ModelNew} />
        <Route path="/models/:id" component={ModelPage} />
        <Route path="/endpoints" component={EndpointList} />
        <Route path="/endpoints/new" component={EndpointNew} />
        <Route path="/endpoints/:slug/:tab?" component={EndpointPage} />
        <Route path="/analytics" component={AnalyticsPage} />
        <Route path="/settings" component={SettingsPage} />
        <Route default component={NotFound} />
      </Router>
    </Layout>
  );
}

/**
 * Where a visitor must go, or undefined to stay: the first run's page while there is no user, the login page
 * without a token (with the page to return to), and from a public page with a token to where they were going.
 */
function redirectFor(status: SetupStatus, signedIn: boolean, path: string, url: string, next: string | undefined): string | undefined {
  if (!status.has_users && !signedIn) return path !== '/setup' ? '/setup' : undefined;
  if (!signedIn) {
    if (path === '/login') return undefined;
    return path === '/' || PUBLIC_PAGES.has(path) ? '/login' : `/login?next=${encodeURIComponent(url)}`;
  }
  if (!PUBLIC_PAGES.has(path)) return undefined;
  return next?.startsWith('/') && !next.startsWith('//') ? next : '/';
}

/** Without a token: the first run's page, the login page, or a wait while the redirect happens. */
function SignedOut(props: { status: SetupStatus; path: string; onSetupDone: () => void }) {
  if (props.path === '/setup' && !props.status.has_users) {
    return <Setup registrationOpen={props.status.registration_open} onDone={props.onSetupDone} />;
  }
  if (props.path === '/login') return <Login />;
  return <Loading />;
}

const NAV = [
  { href: '/', label: 'Overview' },
  { href: '/datasets', label: 'Datasets' },
  { href: '/models', label: 'Models' },
  { href: '/endpoints', label: 'Endpoints' },
  { href: '/analytics', label: 'Analytics' },
  { href: '/settings', label: 'Settings' },
];

function Layout(props: { me: Me; children: ComponentChildren }) {
  const { path } = useLocation();
  const first = useRef(true);
  // After a navigation, keyboard and screen-reader users start at the new page, not at the link they used.
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    document.getElementById('main')?.focus();
  }, [path]);
  const current = (href: string) => (href === '/' ? path === '/' : path === href || path.startsWith(`${href}/`));
  return (
    <div class="layout">
      <a class="skip-link" href="#main">
        Skip to content
      </a>
      <header class="topbar">
        <a href="/" class="brand" aria-label="knode overview">
          <span class="brand-mark" aria-hidden="true" />
          knode
        </a>
        <nav aria-label="Main">
          <ul>
            {NAV.map((item) => (
              <li key={item.href}>
                <a href={item.href} aria-current={current(item.href) ? 'page' : undefined}>
                  {item.label}
                </a>
              </li>
            ))}
            <li>
              <a href="/docs" target="_blank" rel="noopener">
                API docs
              </a>
            </li>
          </ul>
        </nav>
        <div class="account">
          <span class="account-name" title={`Tenant ${props.me.tenant_name}`}>
            {props.me.email}
          </span>
          <button type="button" class="secondary small" onClick={() => session.end()}>
            Log out
          </button>
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        {props.children}
      </main>
    </div>
  );
}
