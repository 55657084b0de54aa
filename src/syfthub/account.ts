/**
 * The identity of a hub account: the hub's URL (scheme, host and port lower-cased, default port, query and
 * trailing slashes dropped) and the username (hub usernames are case-insensitive). Two marketplace records
 * with the same key log in as the same account, and only one tenant may hold it (API-CONTRACT 6).
 */
export function hubAccountKey(url: string, username: string): string {
  return `${normalizeHubUrl(url)} ${username.trim().toLowerCase()}`;
}

function normalizeHubUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname.replace(/\/+$/, '')}`;
  } catch {
    return url.trim().replace(/\/+$/, '').toLowerCase();
  }
}
