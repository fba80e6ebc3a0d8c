import { type Kysely, sql } from "kysely";
import { renderReleaseNotes } from "../../domain/releases/release-notes.js";

/**
 * release_versions.release_notes_html: the notes rendered once, when written (publish), so the
 * Sparkle appcast and the dashboard serve stored HTML and no request renders Markdown. Existing
 * notes are rendered here, each through the bounded renderer.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable("release_versions").addColumn("release_notes_html", "text").execute();
  const versions = await sql<{ id: string; release_notes: string }>`
    select id, release_notes from release_versions where release_notes is not null`.execute(db);
  for (const version of versions.rows) {
    const html = await renderReleaseNotes(version.release_notes);
    await sql`update release_versions set release_notes_html = ${html}
      where id = ${version.id}`.execute(db);
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable("release_versions").dropColumn("release_notes_html").execute();
}
