import { isIP } from 'node:net';

/**
 * What kind of address an IP is, for deciding whether a server may call it: loopback (this machine),
 * private networks, link-local (where cloud metadata services live), the metadata services themselves,
 * and what is not a unicast address at all. Written on bytes rather than with `net.BlockList`, so that an
 * IPv4 address spelled as IPv6 (`::ffff:127.0.0.1`, NAT64 `64:ff9b::7f00:1`, 6to4 `2002:7f00:1::`) is
 * judged as the IPv4 address it reaches.
 */

export type AddressKind = 'public' | 'loopback' | 'private' | 'link-local' | 'metadata' | 'reserved';

/** Cloud metadata services: AWS, GCP, Azure, OCI (169.254.169.254), AWS ECS and IPv6, Alibaba, Azure's wire server. */
const METADATA_ADDRESSES = new Set([
  '169.254.169.254',
  '169.254.170.2',
  '169.254.170.23',
  'fd00:ec2:0:0:0:0:0:254',
  'fd00:ec2:0:0:0:0:0:23',
  '100.100.100.200',
  '168.63.129.16',
]);

/** Names that reach a metadata service without naming its address (some resolve only inside the cloud). */
const METADATA_HOSTS = new Set([
  'metadata',
  'metadata.google.internal',
  'metadata.goog',
  'metadata.azure.internal',
  'instance-data',
  'instance-data.ec2.internal',
  'metadata.tencentyun.com',
]);

export function isMetadataHost(host: string): boolean {
  return METADATA_HOSTS.has(host.toLowerCase().replace(/\.$/, ''));
}

/** An address range: the bytes of its first address and the length of its prefix in bits. */
export interface Cidr {
  readonly bytes: Uint8Array;
  readonly prefix: number;
}

/** `10.0.0.0/8`, `fd00::/8`, or a single address (`/32`, `/128`); undefined when it is neither. */
export function parseCidr(text: string): Cidr | undefined {
  const [address = '', prefixText, extra] = text.trim().split('/');
  if (extra !== undefined) return undefined;
  const bytes = addressBytes(address);
  if (!bytes) return undefined;
  const bits = bytes.length * 8;
  if (prefixText !== undefined && !/^\d{1,3}$/.test(prefixText)) return undefined;
  const prefix = prefixText === undefined ? bits : Number(prefixText);
  if (prefix > bits) return undefined;
  return { bytes, prefix };
}

/** Whether the range holds the address (an IPv4 address spelled as IPv6 counts as that IPv4 address). */
export function cidrContains(cidr: Cidr, address: string): boolean {
  const bytes = addressBytes(address);
  return bytes !== undefined && bytesIn(bytes, cidr);
}

/** Whether two ranges share an address (one holds the other's first address, ranges being aligned blocks). */
export function cidrsOverlap(a: Cidr, b: Cidr): boolean {
  if (a.bytes.length !== b.bytes.length) return false;
  return bytesIn(a.bytes, b) || bytesIn(b.bytes, a);
}

const MAPPED = parseV6Prefix('::ffff:0:0', 96);
const NAT64 = parseV6Prefix('64:ff9b::', 96);
const SIX_TO_FOUR = parseV6Prefix('2002::', 16);

function parseV6Prefix(address: string, prefix: number): Cidr {
  return { bytes: v6Bytes(address), prefix };
}

const RANGES: [AddressKind, Cidr][] = (
  [
    ['loopback', '127.0.0.0/8'],
    // 0.0.0.0 is "this host": connecting to it reaches the local machine.
    ['loopback', '0.0.0.0/8'],
    ['loopback', '::1/128'],
    ['loopback', '::/128'],
    ['link-local', '169.254.0.0/16'],
    ['link-local', 'fe80::/10'],
    ['private', '10.0.0.0/8'],
    ['private', '172.16.0.0/12'],
    ['private', '192.168.0.0/16'],
    ['private', '100.64.0.0/10'],
    ['private', '198.18.0.0/15'],
    ['private', 'fc00::/7'],
    ['private', 'fec0::/10'],
    ['reserved', '224.0.0.0/4'],
    ['reserved', '240.0.0.0/4'],
    ['reserved', 'ff00::/8'],
  ] as const
).map(([kind, text]) => [kind, parseCidr(text) as Cidr]);

/** The kind of an IP address (brackets and an IPv6 zone are ignored); `reserved` for what is not an IP. */
export function addressKind(address: string): AddressKind {
  const bytes = addressBytes(address);
  if (!bytes) return 'reserved';
  if (METADATA_ADDRESSES.has(bytesToText(bytes))) return 'metadata';
  for (const [kind, cidr] of RANGES) if (bytesIn(bytes, cidr)) return kind;
  return 'public';
}

/** The address in its plain form (IPv4 dotted, IPv6 uncompressed, an IPv4 spelled as IPv6 as IPv4). */
export function canonicalAddress(address: string): string | undefined {
  const bytes = addressBytes(address);
  return bytes ? bytesToText(bytes) : undefined;
}

function bytesIn(bytes: Uint8Array, cidr: Cidr): boolean {
  if (bytes.length !== cidr.bytes.length) return false;
  const whole = Math.floor(cidr.prefix / 8);
  for (let i = 0; i < whole; i++) if (bytes[i] !== cidr.bytes[i]) return false;
  const rest = cidr.prefix % 8;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return ((bytes[whole] ?? 0) & mask) === ((cidr.bytes[whole] ?? 0) & mask);
}

function bytesToText(bytes: Uint8Array): string {
  if (bytes.length === 4) return [...bytes].join('.');
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push((((bytes[i] ?? 0) << 8) | (bytes[i + 1] ?? 0)).toString(16));
  return groups.join(':');
}

/** 4 bytes for IPv4 (and IPv4 reached through an IPv6 spelling), 16 for IPv6; undefined when not an IP. */
function addressBytes(text: string): Uint8Array | undefined {
  const address = text
    .trim()
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/%.*$/, '');
  const family = isIP(address);
  if (family === 4) return Uint8Array.from(address.split('.').map(Number));
  if (family !== 6) return undefined;
  const bytes = v6Bytes(address.toLowerCase());
  const embedded = embeddedV4(bytes);
  return embedded ?? bytes;
}

function v6Bytes(address: string): Uint8Array {
  let text = address;
  let v4: number[] | undefined;
  const last = text.lastIndexOf(':');
  if (text.slice(last + 1).includes('.')) {
    v4 = text
      .slice(last + 1)
      .split('.')
      .map(Number);
    text = `${text.slice(0, last + 1)}0:0`;
  }
  const split = text.split('::');
  const groups = (part: string | undefined) => (part ? part.split(':').map((group) => Number.parseInt(group, 16)) : []);
  const head = groups(split[0]);
  const tail = groups(split[1]);
  const all = split.length === 2 ? [...head, ...new Array(8 - head.length - tail.length).fill(0), ...tail] : head;
  const bytes = new Uint8Array(16);
  all.forEach((group, i) => {
    bytes[i * 2] = group >> 8;
    bytes[i * 2 + 1] = group & 0xff;
  });
  if (v4) bytes.set(v4, 12);
  return bytes;
}

/** The IPv4 address an IPv6 one stands for (mapped, NAT64, 6to4), which is what a connection reaches. */
function embeddedV4(bytes: Uint8Array): Uint8Array | undefined {
  if (bytesIn(bytes, MAPPED) || bytesIn(bytes, NAT64)) return bytes.slice(12, 16);
  if (bytesIn(bytes, SIX_TO_FOUR)) return bytes.slice(2, 6);
  return undefined;
}
