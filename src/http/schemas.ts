import { Type } from 'typebox';
import { BASE_URL_FORMAT, NOT_BLANK, SERVICE_URL_FORMAT } from '../util/json-schema.ts';
import { NAME_MAX_LENGTH, SHORT_TEXT_MAX_LENGTH } from './field-bounds.ts';

/** Building blocks shared by the route schemas. */
export const Uuid = Type.String({ format: 'uuid' });
export const Timestamp = Type.String({ format: 'date-time' });
export const ErrorBody = Type.Object({ detail: Type.String() });
export const MessageBody = Type.Object({ message: Type.String() });
export const IdParams = Type.Object({ id: Uuid });

/** Free-form configuration objects: bounded so a client cannot send megabytes of keys. */
export const Configuration = Type.Record(Type.String({ maxLength: 100 }), Type.Unknown(), { maxProperties: 100 });

export const Name = Type.String({ minLength: 1, maxLength: NAME_MAX_LENGTH, pattern: NOT_BLANK });
export const ShortText = Type.String({ maxLength: SHORT_TEXT_MAX_LENGTH });
export const LongText = Type.String({ maxLength: 50_000 });

/** An absolute http(s) URL with a host (`format: uri` alone lets `https://` and `http:///x` through). */
export const HttpUrl = Type.String({
  format: 'uri',
  pattern: '^https?://[^/?#\\s]',
  maxLength: 2000,
  errorMessage: 'Write an http or https URL with a host, e.g. https://knode.example.net',
});

/** A server's URL that knode appends paths to (a model's, an RPC node's): no query string or fragment (issue 22). */
export const BaseUrl = Type.String({ format: BASE_URL_FORMAT, maxLength: 2000 });

/** A service's URL whose credentials have fields of their own (a marketplace, its accounting): no user information either. */
export const ServiceUrl = Type.String({ format: SERVICE_URL_FORMAT, maxLength: 2000 });
