/** Whether a string is an absolute http or https URL. */
export function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}

/**
 * Why a string is not a base URL that paths are appended to (undefined when it is one): an absolute http
 * or https URL with a host, and no query string or fragment, which would turn whatever is appended into
 * a query (`http://host/anything?` + `/models`) and so let the URL point at any path. The raw text is
 * checked, as the URL parser drops an empty `?` or `#`. User information (`user:password@`) only where
 * the field may carry it.
 */
export function baseUrlProblem(value: string, options: { userInfo: boolean }): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'Input should be a valid http or https URL';
  }
  // As typed, a host right after `//`: the parser would read `http:///path` as the host `path`.
  const hosted = /^https?:\/\/[^/?#\s]/i.test(value);
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.hostname === '' || !hosted) {
    return 'Input should be a valid http or https URL';
  }
  if (value.includes('?') || value.includes('#')) return 'A base URL may not have a query string (?) or a fragment (#)';
  if (!options.userInfo && (url.username !== '' || url.password !== '' || value.includes('@'))) {
    return 'A user name or password may not be part of this URL: give them in their own fields';
  }
  return undefined;
}
