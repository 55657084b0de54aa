import { Type } from 'typebox';

/**
 * What a policy's configuration may hold, per type (API-CONTRACT 4), with its defaults, served as they are
 * to clients that build forms. A key given as null counts as not given; keys the type does not know are
 * dropped. What no schema can say is checked in code (configuration.ts): every access pattern that is not
 * a plain e-mail compiles as a regular expression.
 */

export const POLICY_TYPES = ['access', 'rate_limit', 'accounting'] as const;
export type PolicyType = (typeof POLICY_TYPES)[number];

/** `<count>/<period>`: at most 999,999,999 queries per second, minute, hour or day. */
export const RATE_PATTERN = '^[1-9][0-9]{0,8}/(s|m|h|d)$';

export const AccessConfigurationSchema = Type.Object(
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

export const RateLimitConfigurationSchema = Type.Object(
  { rate: Type.String({ pattern: RATE_PATTERN, examples: ['10/m'], description: 'Queries per caller per period' }) },
  { description: 'How often each caller may query the endpoint' },
);

export const AccountingConfigurationSchema = Type.Object(
  {
    enabled: Type.Optional(Type.Boolean({ default: true })),
    require_transaction_token: Type.Optional(
      Type.Boolean({ default: false, description: "Queries must bring a transaction token the owner's accounting service accepts" }),
    ),
  },
  { description: "What queries cost, settled with the owner's accounting service" },
);

/** The configuration schema of each policy type. */
export const POLICY_CONFIGURATION_SCHEMAS = {
  access: AccessConfigurationSchema,
  rate_limit: RateLimitConfigurationSchema,
  accounting: AccountingConfigurationSchema,
} as const satisfies Record<PolicyType, unknown>;
