/**
 * Argon2id, the memory-hard algorithm OWASP recommends (19 MiB, 2 passes), from Bun's built-in
 * implementation, so the compiled binary needs no native addon for it.
 */
const OPTIONS = { algorithm: 'argon2id', memoryCost: 19456, timeCost: 2 } as const;

export function hashPassword(password: string): Promise<string> {
  return Bun.password.hash(password, OPTIONS);
}

export function verifyPassword(password: string, hash: string): Promise<boolean> {
  return Bun.password.verify(password, hash);
}

let dummyHash: Promise<string> | undefined;

/** Spends the time a real verification would, so an unknown e-mail cannot be told apart by timing. */
export async function verifyAgainstNothing(password: string): Promise<false> {
  dummyHash ??= hashPassword('knode-timing-equaliser');
  await Bun.password.verify(password, await dummyHash);
  return false;
}
