import { useState } from 'preact/hooks';
import { ApiError, post } from '../api.ts';
import { Notice, SubmitButton, TextField } from '../components/ui.tsx';
import { useFirstRender, useTitle } from '../lib/hooks.ts';
import { session } from '../session.ts';
import type { AccessToken } from '../views.ts';

export function Login() {
  useTitle('Log in');
  useFirstRender();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [failure, setFailure] = useState<string | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const notice = session.notice.value;

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setFailure(undefined);
    try {
      const { access_token } = await post<AccessToken>('/auth/login', { email, password }, { anonymous: true });
      session.start(access_token);
    } catch (error) {
      setFailure(error instanceof ApiError ? error.message : String(error));
    } finally {
      setBusy(false);
    }
  };

  return (
    <main class="center" id="main">
      <div class="card auth-card">
        <h1>Log in to knode</h1>
        {notice && <Notice kind="warning">{notice}</Notice>}
        <form onSubmit={submit}>
          <TextField label="E-mail" type="email" autoComplete="username" required value={email} onInput={setEmail} />
          <TextField label="Password" type="password" autoComplete="current-password" required value={password} onInput={setPassword} />
          {failure && <Notice kind="error">{failure}</Notice>}
          <SubmitButton busy={busy} busyLabel="Logging in…">
            Log in
          </SubmitButton>
        </form>
      </div>
    </main>
  );
}
