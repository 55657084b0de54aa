import { useState } from 'preact/hooks';
import { NAME_MAX_LENGTH } from '../../src/http/field-bounds.ts';
import { post } from '../api.ts';
import { useSubmission } from '../lib/hooks.ts';
import { Empty, ErrorNotice, SubmitButton, TextField } from './ui.tsx';

/** Where SyftHub runs: a newcomer's marketplace, so the form starts with it (another hub's URL replaces it). */
const SYFTHUB_URL = 'https://syfthub.openmined.org';

/** Connects a marketplace account: knode logs in once to check it (400 with the hub's reason if refused). */
export function ConnectMarketplace(props: {
  first: boolean;
  onConnected: () => Promise<void>;
  /** Inside another card (Settings): no card of its own. */
  embedded?: boolean;
}) {
  const [name, setName] = useState('SyftHub');
  const [url, setUrl] = useState(SYFTHUB_URL);
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const { busy, errors, failure, run } = useSubmission();
  const [open, setOpen] = useState(props.first);

  const submit = async (event: Event) => {
    event.preventDefault();
    await run(async () => {
      await post('/marketplaces/', { name, url, username, password });
      setPassword('');
      setOpen(false);
      await props.onConnected();
    });
  };

  if (!open) {
    return (
      <p>
        <button type="button" class="secondary" onClick={() => setOpen(true)}>
          Connect another marketplace
        </button>
      </p>
    );
  }
  return (
    <form class={props.embedded ? 'form connect-form' : 'card form'} onSubmit={submit} aria-labelledby="connect-title">
      {props.embedded ? <h3 id="connect-title">Connect a marketplace</h3> : <h2 id="connect-title">Connect a marketplace</h2>}
      {props.first && <Empty>No marketplace yet: connect your SyftHub account to publish your endpoints.</Empty>}
      <p data-connect="about">SyftHub is the marketplace where people find your endpoints, get tokens to query them, and pay for them.</p>
      <TextField label="Name" required maxLength={NAME_MAX_LENGTH} value={name} onInput={setName} error={errors.name} />
      <TextField
        label="Marketplace URL"
        type="url"
        required
        placeholder={SYFTHUB_URL}
        hint="SyftHub's address; replace it only to use another hub."
        value={url}
        onInput={setUrl}
        error={errors.url}
      />
      <TextField
        label="User name"
        required
        autoComplete="off"
        hint="Your hub user name (not your e-mail): consumers' tokens name it."
        value={username}
        onInput={setUsername}
        error={errors.username}
      />
      <TextField
        label="Password"
        type="password"
        required
        autoComplete="off"
        hint="Stored encrypted; knode logs in once now to check it."
        value={password}
        onInput={setPassword}
        error={errors.password}
      />
      <ErrorNotice error={failure} />
      <div class="form-actions">
        <SubmitButton busy={busy} busyLabel="Connecting…">
          Connect
        </SubmitButton>
      </div>
    </form>
  );
}
