import type { Kysely, Transaction } from "kysely";
import type { DB } from "../../db/schema.js";
import { ShipkeyError } from "../../errors.js";
import {
  hasControlCharacter,
  hasControlCharacterBesidesLineBreaks,
} from "../../lib/control-characters.js";
import { requireProduct } from "../products/products.js";
import { defaultTemplates } from "./default-templates.js";
import { assertValidTemplate, type EmailTemplate } from "./templates.js";
import type { EmailSettings } from "../../contracts/emails.js";
import { type EmailKind, emailKinds, emailPlaceholders } from "../../contracts/vocabulary.js";

/** What a product's messages are rendered with: its template and the names and link they use. */
export interface EmailFrame {
  template: EmailTemplate;
  vendorName: string;
  downloadUrl: string | null;
}

/** The template, vendor name and download link of a product's messages of one kind. */
export async function emailFrame(
  db: Kysely<DB>,
  product: { id: string; name: string },
  kind: EmailKind,
): Promise<EmailFrame> {
  const settings = await db
    .selectFrom("product_email_settings")
    .select(["vendor_name", "download_url"])
    .where("product_id", "=", product.id)
    .executeTakeFirst();
  const custom = await db
    .selectFrom("email_templates")
    .select(["subject", "body"])
    .where("product_id", "=", product.id)
    .where("kind", "=", kind)
    .executeTakeFirst();
  return {
    template: custom ?? defaultTemplates[kind],
    vendorName: settings?.vendor_name ?? product.name,
    downloadUrl: settings?.download_url ?? null,
  };
}

/** A product's e-mail settings, every kind's template (its own or the default). */
export async function getEmailSettings(db: Kysely<DB>, slug: string): Promise<EmailSettings> {
  const product = await requireProduct(db, slug);
  const settings = await db
    .selectFrom("product_email_settings")
    .select(["vendor_name", "download_url", "expiry_reminders"])
    .where("product_id", "=", product.id)
    .executeTakeFirst();
  const custom = await db
    .selectFrom("email_templates")
    .select(["kind", "subject", "body"])
    .where("product_id", "=", product.id)
    .execute();
  const own = new Map(custom.map((row) => [row.kind, row]));
  return {
    product: product.slug,
    vendorName: settings?.vendor_name ?? null,
    downloadUrl: settings?.download_url ?? null,
    expiryReminders: settings?.expiry_reminders === 1,
    templates: emailKinds.map((kind) => {
      const template = own.get(kind);
      return template
        ? { kind, subject: template.subject, body: template.body, custom: true }
        : { kind, ...defaultTemplates[kind], custom: false };
    }),
    placeholders: [...emailPlaceholders],
  };
}

export interface EmailSettingsChanges {
  vendorName?: string | null;
  downloadUrl?: string | null;
  expiryReminders?: boolean;
  /** A kind's new template; null: the default text again. */
  templates?: Partial<Record<EmailKind, EmailTemplate | null>>;
}

function checkChanges(changes: EmailSettingsChanges): void {
  const { vendorName, downloadUrl, templates = {} } = changes;
  if (typeof vendorName === "string" && hasControlCharacter(vendorName)) {
    throw new ShipkeyError("INVALID_FIELD_VALUE", "vendorName must not hold control characters", {
      field: "vendorName",
    });
  }
  if (typeof downloadUrl === "string" && !isHttpUrl(downloadUrl)) {
    throw new ShipkeyError("INVALID_FIELD_VALUE", "downloadUrl must be an http(s) URL", {
      field: "downloadUrl",
    });
  }
  for (const kind of emailKinds) {
    const template = templates[kind];
    if (!template) continue;
    const field = `templates.${kind}`;
    if (hasControlCharacter(template.subject)) {
      throw new ShipkeyError(
        "INVALID_FIELD_VALUE",
        `${field}.subject must be one line without control characters`,
        { field: `${field}.subject` },
      );
    }
    if (hasControlCharacterBesidesLineBreaks(template.body)) {
      throw new ShipkeyError(
        "INVALID_FIELD_VALUE",
        `${field}.body must not hold control characters`,
        {
          field: `${field}.body`,
        },
      );
    }
    assertValidTemplate(template, field);
  }
}

function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return url.protocol === "https:" || url.protocol === "http:";
  } catch {
    return false;
  }
}

/**
 * Changes a product's e-mail settings: every template is checked before anything is written
 * (400 EMAIL_TEMPLATE_INVALID naming the part). An empty vendor name or link is null.
 */
export async function updateEmailSettings(
  trx: Transaction<DB>,
  slug: string,
  changes: EmailSettingsChanges,
  now = Date.now(),
): Promise<EmailSettings> {
  checkChanges(changes);
  const product = await requireProduct(trx, slug);
  const blankToNull = (value: string | null | undefined) =>
    value === undefined ? undefined : value === null || value.trim() === "" ? null : value.trim();
  const vendorName = blankToNull(changes.vendorName);
  const downloadUrl = blankToNull(changes.downloadUrl);
  const reminders = changes.expiryReminders;
  if (vendorName !== undefined || downloadUrl !== undefined || reminders !== undefined) {
    const values = {
      ...(vendorName === undefined ? {} : { vendor_name: vendorName }),
      ...(downloadUrl === undefined ? {} : { download_url: downloadUrl }),
      ...(reminders === undefined ? {} : { expiry_reminders: reminders ? 1 : 0 }),
      updated_at: now,
    };
    await trx
      .insertInto("product_email_settings")
      .values({ product_id: product.id, ...values })
      .onConflict((oc) => oc.column("product_id").doUpdateSet(values))
      .execute();
  }
  for (const kind of emailKinds) {
    const template = changes.templates?.[kind];
    if (template === undefined) continue;
    await trx
      .deleteFrom("email_templates")
      .where("product_id", "=", product.id)
      .where("kind", "=", kind)
      .execute();
    if (template === null) continue;
    await trx
      .insertInto("email_templates")
      .values({
        product_id: product.id,
        kind,
        subject: template.subject,
        body: template.body,
        updated_at: now,
      })
      .execute();
  }
  return getEmailSettings(trx, slug);
}
