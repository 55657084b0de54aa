import { useState } from 'preact/hooks';
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH, TENANT_NAME_MAX_LENGTH } from '../../src/http/field-bounds.ts';
import { post } from '../api.ts';
import { ErrorNotice, Notice, SubmitButton, TextField } from '../components/ui.tsx';
import { useFirstRender, useSubmission, useTitle } from '../lib/hooks.ts';
import { session } from '../session.ts';
import type { AccessToken } from '../views.ts';

/** A tenant name from an e-mail's local part: letters, digits, `_`, `.` and `-`, starting with a letter or digit. */
function tenantFrom(email: string): string {
  const local = (email.split('@')[0] ?? '').replace(/[^A-Za-z0-9_.-]/g, '').replace(/^[^A-Za-z0-9]+/, '');
  return local.slice(0, TENANT_NAME_MAX_LENGTH);
}

/** First run: nobody has registered, so the person at the keyboard creates the owner's account. */
export function Setup(props: { registrationOpen: boolean; onDone: () => void }) {
  useTitle('Welcome');
  useFirstRender();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [confirm, setConfirm] = useState('');
  const [tenant, setTenant] = useState('');
  const [tenantTouched, setTenantTouched] = useState(false);
  const { busy, errors, setErrors, failure, run } = useSubmission();

  const submit = async (event: Event) => {
    event.preventDefault();
    const tenantName = tenant || tenantFrom(email);
    if (password !== confirm) {
      setErrors({ confirm: 'The two passwords differ' });
      return;
    }
    const done = await run(async () => {
      await post('/auth/register', { email, password, tenant_name: tenantName }, { anonymous: true });
      const { access_token } = await post<AccessToken>('/auth/login', { email, password }, { anonymous: true });
      session.start(access_token);
    });
    if (done) props.onDone();
  };

  return (
    <main class="center" id="main">
      <div class="card auth-card">
        <h1>Welcome to knode</h1>
        <p>
          knode turns folders of documents into endpoints that answer questions with your own models. Nobody has an account here yet: create
          the owner's account to begin.
        </p>
        {!props.registrationOpen && (
          <Notice kind="warning">
            Registration is closed to this browser (knode runs with an admin key, or you are not on the machine it runs on). Register with
            the admin key: POST /api/v1/auth/register.
          </Notice>
        )}
        <form onSubmit={submit} noValidate={false}>
          <TextField
            label="E-mail"
            type="email"
            autoComplete="username"
            required
            value={email}
            error={errors.email}
            onInput={(value) => {
              setEmail(value);
              if (!tenantTouched) setTenant(tenantFrom(value));
            }}
          />
          <TextField
            label="Password"
            type="password"
            autoComplete="new-password"
            required
            minLength={PASSWORD_MIN_LENGTH}
            maxLength={PASSWORD_MAX_LENGTH}
            hint={`At least ${PASSWORD_MIN_LENGTH} characters.`}
            value={password}
            error={errors.password}
            onInput={setPassword}
          />
          <TextField
            label="Password again"
            type="password"
            autoComplete="new-password"
            required
            value={confirm}
            error={errors.confirm}
            onInput={setConfirm}
          />
          <TextField
            label="Tenant name"
            required
            pattern="[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}"
            hint="Your space in knode: letters, digits, '_', '.' and '-'. Everything you create belongs to it."
            value={tenant}
            error={errors.tenant_name}
            onInput={(value) => {
              setTenant(value);
              setTenantTouched(true);
            }}
          />
          <ErrorNotice error={failure} />
          <SubmitButton busy={busy} busyLabel="Creating…">
            Create the owner account
          </SubmitButton>
        </form>
      </div>
    </main>
  );
}
