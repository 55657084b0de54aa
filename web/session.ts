/**
 * Who is logged in. The token is kept in localStorage so that a reload (or a new tab) stays logged in;
 * it lasts an hour (the API's JWT lifetime), after which the first 401 brings the login page back.
 */
import { signal } from '@preact/signals';

const KEY = 'knode.token';

function stored(): string | null {
  try {
    return localStorage.getItem(KEY);
  } catch {
    return null;
  }
}

export const session = {
  token: signal<string | null>(stored()),
  /** Why the person is on the login page again (an expired or refused token). */
  notice: signal<string | null>(null),
  /** The logged-in person's e-mail once `GET /auth/me` answered (the console asks once per login). */
  email: signal<string | null>(null),

  start(token: string): void {
    localStorage.setItem(KEY, token);
    session.notice.value = null;
    session.token.value = token;
  },

  end(notice: string | null = null): void {
    localStorage.removeItem(KEY);
    session.notice.value = notice;
    session.email.value = null;
    session.token.value = null;
  },

  /** The API refused the token (401): log in again. */
  expire(): void {
    session.end('Your session has ended: please log in again.');
  },
};
