import type { DestinationStream } from 'pino';
import type { FakeSyftHub } from '../fakes/syfthub.ts';
import type { TestApp, TestUser } from './app.ts';

/** Log lines of a test app, as pino writes them. */
export function logCollector(): { lines: string[]; destination: DestinationStream } {
  const lines: string[] = [];
  return { lines, destination: { write: (line: string) => void lines.push(line) } };
}

export interface ConnectedMarketplace {
  id: string;
  name: string;
  username: string;
  password: string;
}

/**
 * Registers an account at the hub and connects the user's tenant to it (the credentials are checked
 * there). `username` is the hub account, which satellite tokens name as their audience.
 */
export async function connectMarketplace(
  t: TestApp,
  user: TestUser,
  hub: FakeSyftHub,
  username: string,
  extra: Record<string, unknown> = {},
): Promise<ConnectedMarketplace> {
  const password = `${username}-hub-password`;
  hub.addUser({ username, email: `${username}@hub.example`, password });
  const name = typeof extra.name === 'string' ? extra.name : `hub-${username}`;
  const response = await t.request({
    method: 'POST',
    url: '/api/v1/marketplaces/',
    token: user.token,
    payload: { name, url: hub.url, username, password, ...extra },
  });
  if (response.statusCode !== 201) throw new Error(`marketplace: ${response.statusCode} ${response.body}`);
  return { id: response.json().id, name, username, password };
}
