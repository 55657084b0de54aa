import { Type } from 'typebox';

/**
 * What a policy's configuration may hold, per type (API-CONTRACT 4, 10.3 and 10.4), with its defaults, served as
 * they are to clients that build forms. A key given as null counts as not given; keys the type does not know
 * are dropped. What no schema can say is checked in code (configuration.ts): every access pattern that is not a plain
 * e-mail, and every `applied_to` entry written as a regular expression, compiles, and a price has at most 6 decimals.
 */

export const POLICY_TYPES = ['access', 'rate_limit', 'accounting', 'mpp', 'pii_filter'] as const;
export type PolicyType = (typeof POLICY_TYPES)[number];

/** `<count>/<period>`: at most 999,999,999 queries per second, minute, hour or day. */
const RATE_PATTERN = '^[1-9][0-9]{0,8}/(s|m|h|d)$';
/** What a 422 says of a rate that is not one (the pattern is for machines). */
const RATE_MESSAGE = 'Write a number and a period: 10/m (per minute), 100/h, 5/s or 1000/d';

const AccessConfigurationSchema = Type.Object(
  {
    mode: Type.Enum(['allow', 'deny'], { description: 'allow: only matching e-mails may query; deny: everyone else may' }),
    patterns: Type.Array(Type.String({ minLength: 1, maxLength: 500 }), {
      minItems: 1,
      maxItems: 1000,
      description:
        'A plain e-mail is compared literally; anything else is a case-insensitive regular expression that must match the whole e-mail',
      examples: [['alice@example.com', '.*@example\\.org']],
    }),
  },
  { description: 'Who may query the endpoint, by the e-mail of the caller' },
);

const RateLimitConfigurationSchema = Type.Object(
  {
    rate: Type.String({
      pattern: RATE_PATTERN,
      examples: ['10/m'],
      description: 'Queries per caller per period: a number, a slash and s, m, h or d (10/m is ten a minute)',
      errorMessage: RATE_MESSAGE,
    }),
  },
  { description: 'How often each caller may query the endpoint' },
);

const AccountingConfigurationSchema = Type.Object(
  {
    enabled: Type.Optional(Type.Boolean({ default: true })),
    require_transaction_token: Type.Optional(
      Type.Boolean({ default: false, description: "Queries must bring a transaction token the owner's accounting service accepts" }),
    ),
  },
  { description: "What queries cost, settled with the owner's accounting service" },
);

/** The most an `mpp` price may be: far above any query, low enough that 6 decimals stay exact in a double. */
const MPP_MAX_PRICE = 1_000_000;

const PAYERS_RULE =
  'An entry is an exact e-mail, an e-mail glob (* any characters, ? one: *@example.org), or a case-insensitive regular expression ' +
  'that must match the whole e-mail; when several prices apply, the most specific wins (an exact e-mail before a glob)';

const MppConfigurationSchema = Type.Object(
  {
    price: Type.Number({
      minimum: 0,
      maximum: MPP_MAX_PRICE,
      examples: [0.01],
      description: 'USD per unit (at most 6 decimals); 0 makes the query free',
    }),
    unit_type: Type.Optional(
      Type.Enum(['request', 'document'], {
        default: 'request',
        description: 'request: one price per query; document: the price times the documents the query asks for (its limit)',
      }),
    ),
    applied_to: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 500 }), {
        minItems: 1,
        maxItems: 1000,
        default: ['*'],
        description: `Who pays this price (anyone by default); a caller no entry matches may not query. ${PAYERS_RULE}`,
        examples: [['*'], ['*@example.org'], ['bob@example.com']],
      }),
    ),
    currency: Type.Optional(Type.Literal('USD', { default: 'USD' })),
  },
  { description: "A price paid per query with MPP (Tempo stablecoins) to the tenant's payment wallet" },
);

/**
 * The longest `instructions` of a PII filter: they go into the prompt of every filtered answer, so a
 * paragraph or two (what else counts as personal data here) and not a document.
 */
export const PII_INSTRUCTIONS_MAX = 2000;

/** What the PII filter replaces whatever an owner adds (pii-filter-hook.ts words it for the model). */
export const PII_KINDS =
  'names of private persons, e-mail addresses, phone numbers, postal addresses, dates of birth, ' +
  'ID, passport, social security and tax numbers, and bank account and card numbers';

const PiiFilterConfigurationSchema = Type.Object(
  {
    instructions: Type.Optional(
      Type.String({
        maxLength: PII_INSTRUCTIONS_MAX,
        default: '',
        description: `Added to the filter's own instructions, which already replace ${PII_KINDS}`,
        examples: ['Also replace the names of our customers and their order numbers.'],
      }),
    ),
  },
  {
    description:
      "The endpoint's own model replaces personal data in each answer with [REDACTED] before it is sent " +
      '(the answer only: passages are sent as they are)',
  },
);

/** The configuration schema of each policy type. */
export const POLICY_CONFIGURATION_SCHEMAS = {
  access: AccessConfigurationSchema,
  rate_limit: RateLimitConfigurationSchema,
  accounting: AccountingConfigurationSchema,
  mpp: MppConfigurationSchema,
  pii_filter: PiiFilterConfigurationSchema,
} as const satisfies Record<PolicyType, unknown>;
