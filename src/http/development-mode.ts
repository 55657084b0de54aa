import type { FastifyRequest } from 'fastify';
import type { Config } from '../config.ts';
import { isDirectLocal } from './client.ts';

/**
 * Development mode, asked in one place (API-CONTRACT 3). Whether knode is in it is the configuration's
 * `developmentMode` (no SVC_ADMIN_API_KEY, config.ts); this module says which requests it trusts: those made
 * directly on this machine (client.ts `isDirectLocal`: a loopback peer and Host, nothing forwarded, no other
 * page's Origin). What arrives through the tunnel, from the network or from another web page is a remote
 * client, in development mode too.
 */

export type DevelopmentConfig = Pick<Config, 'developmentMode'>;

/** Is knode in development mode? */
export function isDevelopmentMode(config: DevelopmentConfig): boolean {
  return config.developmentMode;
}

/** Is this request trusted as development-mode local: knode is in development mode and the request was made on this machine? */
export function isTrustedDevelopmentRequest(config: DevelopmentConfig, request: FastifyRequest): boolean {
  return config.developmentMode && isDirectLocal(request);
}
