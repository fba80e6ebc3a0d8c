import { type Static, Type } from "typebox";
import { contract, DateTime, NullableString, Page, PageQuery, StringEnum, strict } from "./kit.js";
import { limits } from "./vocabulary.js";

// The admin API's audit log, and the actor every entry (and an API key's creator) names.

/** Who did something: an API key, a signed-in admin, the CLI, or the service by itself. */
export const AuditActor = Type.Object(
  {
    type: StringEnum(["api_key", "admin", "cli", "service"]),
    id: NullableString({
      description: "The API key's or the admin's id; null for the CLI and the service",
    }),
    label: Type.String({
      description: "The API key's name, the admin's email, or the CLI's user@host",
    }),
  },
  { title: "Actor" },
);
export type AuditActor = Static<typeof AuditActor>;

export const AuditEntry = Type.Object(
  {
    id: Type.String(),
    at: DateTime(),
    actor: AuditActor,
    action: Type.String({ description: "For example license.create, release.publish" }),
    target: Type.Object({ type: Type.String(), id: Type.String() }),
    ip: NullableString(),
    details: Type.Record(Type.String(), Type.Unknown(), {
      description:
        "What changed; never a secret nor a license key. license.update, license.suspend, " +
        "license.revoke, license.reinstate and license.move: `changes`, each setting that changed " +
        '(status, maxMachines, expiresAt, product, ...) with its old and new value: {"maxMachines": ' +
        '{"from": 1, "to": 3}}',
    }),
  },
  { title: "AuditEntry" },
);
export type AuditEntry = Static<typeof AuditEntry>;

export const listAudit = contract({
  method: "GET",
  url: "/api/admin/audit",
  operationId: "listAuditEntries",
  tag: "Admin: audit",
  summary: "The audit log, newest first",
  description:
    "A key limited to products sees only entries about them. Filters narrow the list; every " +
    "filter given must hold.",
  auth: "audit:read",
  schema: {
    querystring: Type.Object(
      {
        actor: Type.Optional(
          Type.String({
            maxLength: limits.identifier,
            description: "The actor's label (an admin's email, an API key's name) or id, exactly",
          }),
        ),
        action: Type.Optional(
          Type.String({
            maxLength: limits.identifier,
            description: "An action (license.update), or a family of them (license: license.*)",
          }),
        ),
        target: Type.Optional(
          Type.String({
            maxLength: limits.identifier,
            description: "A target's id, or a license key (the license's entries)",
          }),
        ),
        from: Type.Optional(DateTime("Entries at or after this time")),
        to: Type.Optional(DateTime("Entries before this time")),
        ...PageQuery,
      },
      strict,
    ),
    response: { 200: Page(AuditEntry) },
  },
});
