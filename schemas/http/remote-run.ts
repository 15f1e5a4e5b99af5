// `svc run remote` over HTTP (docs/run-remote.md): the relay's
//   POST /v1/orgs/:orgId/remote-runs/uploads → RemoteUpload (where to PUT the sealed overlay)
//   POST /v1/orgs/:orgId/remote-runs         → RemoteRunResult (the runs created)
// and the same shapes inside the relay ↔ orchestrator frames (schemas/wire/relay.ts).
import { Type, type Static } from 'typebox';

const strict = { additionalProperties: false } as const;
const Id = Type.String({ minLength: 1, maxLength: 200 });

/** Where the CLI uploads its sealed overlay, and the key it seals to. */
export const RemoteUpload = Type.Object(
  {
    uploadId: Type.String({ pattern: '^[0-9a-f-]{36}$' }),
    /** Pre-signed PUT for the developer (SVC_STORAGE_UPLOAD_ENDPOINT on S3). */
    uploadUrl: Type.String({ minLength: 1 }),
    /** The orchestrator's X25519 public key, base64 of 32 bytes. */
    publicKey: Type.String({ minLength: 44, maxLength: 44 }),
    expiresInSeconds: Type.Integer({ minimum: 1 }),
  },
  strict,
);
export type RemoteUpload = Static<typeof RemoteUpload>;

/** Base64 of a sealed box of local secrets (core/remote-run-box.ts), at most 1 MiB of plaintext. */
export const MAX_SECRETS_BOX_CHARS = 1_500_000;

export const RemoteRunBody = Type.Object(
  {
    uploadId: Type.String({ pattern: '^[0-9a-f-]{36}$' }),
    /** The fixture this run is for (`fixture(id, …)`), for the run's display and the CLI's report. */
    fixture: Type.String({ minLength: 1, maxLength: 200 }),
    repository: Type.String({ minLength: 1, maxLength: 300 }),
    /** The commit at HEAD: the agents check it out, then apply the overlay. */
    sha: Type.String({ pattern: '^[0-9a-f]{40}$' }),
    ref: Type.Union([Type.String({ maxLength: 500 }), Type.Null()]),
    /** The fixture's event, normalized (schemas/event.ts NormalizedEvent; checked by the orchestrator). */
    event: Type.Unknown(),
    changedFiles: Type.Union([Type.Array(Type.String(), { maxItems: 100_000 }), Type.Null()]),
    /** The matched workflows' entries of the lock compiled from the overlaid tree (checked as LockWorkflow). */
    workflows: Type.Array(Type.Unknown(), { minItems: 1, maxItems: 200 }),
    lockfileHash: Type.Union([Type.String({ maxLength: 200 }), Type.Null()]),
    /** Sealed `{ KEY: value }` from local secret files and --env/--context (base64). */
    secretsBox: Type.Optional(Type.String({ maxLength: MAX_SECRETS_BOX_CHARS })),
    /** The fixture's `secrets:` mapping: local context name → orchestrator context name. */
    contexts: Type.Optional(Type.Record(Type.String({ maxLength: 100 }), Type.String({ maxLength: 100 }))),
  },
  strict,
);
export type RemoteRunBody = Static<typeof RemoteRunBody>;

export const RemoteRunResult = Type.Object(
  {
    runs: Type.Array(Type.Object({ runId: Id, workflow: Type.String() }, strict)),
    warnings: Type.Array(Type.String()),
  },
  strict,
);
export type RemoteRunResult = Static<typeof RemoteRunResult>;
