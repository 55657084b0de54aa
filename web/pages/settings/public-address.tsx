import { useState } from 'preact/hooks';
import { ApiError, del, patch, post } from '../../api.ts';
import { Badge, ErrorNotice, Notice, SubmitButton, TextField } from '../../components/ui.tsx';
import { usePoll, useResource, useSubmission } from '../../lib/hooks.ts';
import type { PublicUrl, Tunnel } from '../../views.ts';

/** Where the public URL came from, in words. */
const SOURCES = {
  set: 'set here or through the API',
  configured: 'SVC_PUBLIC_URL',
  detected: "detected: this machine's public IP address",
  tunnel: 'the tunnel',
} as const;

/** The public URL and the tunnel: operator settings (the admin key, or this machine in development mode). */
export function PublicAddress() {
  const url = useResource<PublicUrl>('/settings/public-url');
  const tunnel = useResource<Tunnel>('/settings/proxy');
  // While the tunnel reconnects, its countdown and reason are kept current.
  usePoll(tunnel.reload, 2000, tunnel.data?.state === 'reconnecting');
  const refused = [url.error, tunnel.error].some((error) => error instanceof ApiError && error.status === 403);
  return (
    <section class="card" aria-labelledby="address-title">
      <h2 id="address-title">Public URL and tunnel</h2>
      {refused ? (
        <Notice>
          Only the operator changes how the internet reaches this knode: with SVC_ADMIN_API_KEY set, use the API with the admin key (see the
          README, "Connecting to SyftHub and publishing").
        </Notice>
      ) : (
        <>
          <PublicUrlForm current={url.data} error={url.error} reload={url.reload} />
          <TunnelControls
            tunnel={tunnel.data}
            error={tunnel.error}
            reload={async () => {
              await Promise.all([tunnel.reload(), url.reload()]);
            }}
          />
        </>
      )}
    </section>
  );
}

function PublicUrlForm(props: { current: PublicUrl | undefined; error: ApiError | undefined; reload: () => Promise<void> }) {
  const [value, setValue] = useState('');
  const { busy, errors, failure, run } = useSubmission();
  const submit = (event: Event) => {
    event.preventDefault();
    void run(async () => {
      await patch('/settings/public-url', { public_url: value });
      setValue('');
      await props.reload();
    });
  };
  return (
    <>
      <ErrorNotice error={props.error} />
      <p data-settings="public-url">
        {props.current?.public_url ? (
          <>
            Consumers reach this knode at <strong>{props.current.public_url}</strong> (from {SOURCES[props.current.source ?? 'set']}).
          </>
        ) : (
          'No public URL yet: the marketplace cannot send consumers here. Set one, or start the tunnel.'
        )}
      </p>
      <form class="inline-form" onSubmit={submit}>
        <TextField
          label="Public URL"
          type="url"
          required
          placeholder="https://knode.example.net"
          hint="Where the internet reaches this knode (a reverse proxy, a port forward); your default marketplace is told first."
          value={value}
          onInput={setValue}
          error={errors.public_url}
        />
        <SubmitButton busy={busy} busyLabel="Saving…">
          Save the URL
        </SubmitButton>
      </form>
      <ErrorNotice error={failure} />
    </>
  );
}

const TUNNEL_TONES = { stopped: 'muted', online: 'good', reconnecting: 'busy' } as const;

function TunnelControls(props: { tunnel: Tunnel | undefined; error: ApiError | undefined; reload: () => Promise<void> }) {
  const [token, setToken] = useState('');
  const submission = useSubmission();
  const { busy, failure } = submission;
  const { tunnel } = props;
  // Which way the tunnel is being started, for the busy label of that button only.
  const [via, setVia] = useState<'hub' | 'token'>('hub');
  const run = (work: () => Promise<unknown>) =>
    submission.run(async () => {
      await work();
      setToken('');
      await props.reload();
    });
  const start = (how: 'hub' | 'token', body: object) => {
    setVia(how);
    return run(() => post('/settings/proxy', body));
  };
  if (props.error?.status === 404) {
    // No marketplace yet: the Marketplaces card says so once; here, only what the tunnel will need.
    return (
      <div data-settings="tunnel">
        <h3>Tunnel</h3>
        <p class="hint">Offered here once a marketplace is connected: its name comes from your hub account.</p>
      </div>
    );
  }
  return (
    <div data-settings="tunnel">
      <h3>Tunnel {tunnel && <Badge tone={TUNNEL_TONES[tunnel.state]}>{tunnel.state}</Badge>}</h3>
      <ErrorNotice error={props.error} />
      {tunnel?.state === 'online' && <p>Online at {tunnel.public_url}.</p>}
      {tunnel?.state === 'reconnecting' && (
        <p>
          Reconnecting{tunnel.retry_in_seconds !== null ? ` in ${tunnel.retry_in_seconds} s` : ''}
          {tunnel.error ? `: ${tunnel.error}` : ''}.
        </p>
      )}
      {tunnel?.state !== 'stopped' ? (
        <button type="button" class="secondary" disabled={busy} onClick={() => void run(() => del('/settings/proxy'))}>
          Stop the tunnel
        </button>
      ) : (
        <>
          <p>
            Your SyftHub account hands knode a tunnel at your hub user name (<em>name</em>.syfthub.ngrok.app): one click, nothing to paste.
            Or start it with an authtoken of your own ngrok account. Either is stored encrypted, so the tunnel comes back after a restart.
          </p>
          <p>
            <button type="button" disabled={busy} onClick={() => void start('hub', { from_marketplace: true })}>
              {busy && via === 'hub' ? 'Starting…' : 'Start the tunnel with my SyftHub account'}
            </button>
          </p>
          <form
            class="inline-form"
            onSubmit={(event) => {
              event.preventDefault();
              void start('token', { tunnel_token: token });
            }}
          >
            <TextField
              label="ngrok authtoken"
              type="password"
              required
              autoComplete="off"
              hint="From your ngrok dashboard."
              value={token}
              onInput={setToken}
            />
            <SubmitButton busy={busy && via === 'token'} busyLabel="Starting…">
              Start the tunnel
            </SubmitButton>
          </form>
        </>
      )}
      <ErrorNotice error={failure} />
    </div>
  );
}
