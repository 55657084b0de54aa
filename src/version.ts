import pkg from '../package.json' with { type: 'json' };

/** The release version, read from package.json at build time so the compiled binary knows it too. */
export const VERSION: string = pkg.version;
