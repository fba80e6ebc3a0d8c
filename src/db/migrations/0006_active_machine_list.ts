import { type Kysely, SqliteAdapter, sql } from "kysely";

/**
 * SQLite only: each license row carries the machine ids of its active activations, as a JSON
 * array in `licenses.active_machine_ids`, so that validate answers "is this machine active?" from
 * the row it reads anyway instead of searching the activation index, a second large B-tree
 * (profiled, docs/performance.md: ~3-4 us of a ~39 us validate at 100 000 licenses).
 *
 * The database keeps the list in step through triggers on activations, whatever writes them
 * (the service, the CLI, a bulk import, an SQL shell): an activation that starts is appended, one
 * that ends is removed. The list is kept only while short (under `activeMachineListChars`); a
 * license with more machines, or any other change to an active activation (a delete, a moved
 * machine, a restarted one), gets NULL, which means "not kept: ask the index", for good.
 * Not covered: REPLACE conflict resolution on activations, whose implicit deletes fire no
 * trigger unless `recursive_triggers` is on; Shipkey never uses it (docs/decisions.md).
 *
 * PostgreSQL has no such column: its validate reads run batched per event-loop turn, and the
 * index lookup there costs little next to the round trip (docs/performance.md).
 */
const activeMachineListChars = 512;

export async function up(db: Kysely<unknown>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof SqliteAdapter)) return;
  // One transaction: a list must never exist without the triggers that keep it true.
  await inOneTransaction(db, addActiveMachineList);
}

/** Runs `work` in the migration's transaction where it has one (Migrator), else in its own. */
function inOneTransaction(
  db: Kysely<unknown>,
  work: (db: Kysely<unknown>) => Promise<void>,
): Promise<void> {
  return db.isTransaction ? work(db) : db.transaction().execute(work);
}

async function addActiveMachineList(db: Kysely<unknown>): Promise<void> {
  // Kysely records a migration after it ran; a crash in between runs it again, which must work.
  const columns = await sql<{
    name: string;
  }>`select name from pragma_table_info('licenses')`.execute(db);
  if (!columns.rows.some((column) => column.name === "active_machine_ids")) {
    await sql`alter table licenses add column active_machine_ids text default '[]'`.execute(db);
  }
  // Licenses without an active machine read the default, the empty list: only the others are
  // written, which keeps the rebuild of a large database short.
  await sql`update licenses set active_machine_ids = (
      select case when length(json_group_array(machine_id)) < ${sql.lit(activeMachineListChars)}
                  then json_group_array(machine_id) end
      from activations where activations.license_id = licenses.id
        and activations.deactivated_at is null)
    where exists (select 1 from activations where activations.license_id = licenses.id
                  and activations.deactivated_at is null)`.execute(db);
  await sql`create trigger if not exists activations_list_started after insert on activations
    when new.deactivated_at is null
    begin
      update licenses set active_machine_ids = case
          when active_machine_ids is null then null
          when length(active_machine_ids) + length(json_quote(new.machine_id)) + 1
               >= ${sql.lit(activeMachineListChars)} then null
          else json_insert(active_machine_ids, '$[#]', new.machine_id) end
        where id = new.license_id;
    end`.execute(db);
  await sql`create trigger if not exists activations_list_ended after update of deactivated_at on activations
    when old.deactivated_at is null and new.deactivated_at is not null
    begin
      update licenses set active_machine_ids = (
          select json_group_array(value) from json_each(licenses.active_machine_ids)
          where value <> old.machine_id)
        where id = old.license_id and active_machine_ids is not null;
    end`.execute(db);
  // Shipkey changes an activation in no other way; whoever does gets the index for that license.
  await sql`create trigger if not exists activations_list_other_change
    after update of id, license_id, machine_id, deactivated_at on activations
    when not (old.deactivated_at is null and new.deactivated_at is not null)
      and (old.deactivated_at is null or new.deactivated_at is null)
      and (old.id is not new.id or old.license_id is not new.license_id
           or old.machine_id is not new.machine_id
           or old.deactivated_at is not new.deactivated_at)
    begin
      update licenses set active_machine_ids = null
        where id in (old.license_id, new.license_id);
    end`.execute(db);
  await sql`create trigger if not exists activations_list_deleted after delete on activations
    when old.deactivated_at is null
    begin
      update licenses set active_machine_ids = null where id = old.license_id;
    end`.execute(db);
  // A license row written again (INSERT OR REPLACE keeps its id, and so its activations) starts
  // from the default empty list: with active machines, that would be wrong.
  await sql`create trigger if not exists licenses_list_reinserted after insert on licenses
    when exists (select 1 from activations where activations.license_id = new.id
                 and activations.deactivated_at is null)
    begin
      update licenses set active_machine_ids = null where id = new.id;
    end`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof SqliteAdapter)) return;
  // One transaction: a list left without its triggers would go stale and still be believed.
  await inOneTransaction(db, async (trx) => {
    for (const trigger of [
      "activations_list_started",
      "activations_list_ended",
      "activations_list_other_change",
      "activations_list_deleted",
      "licenses_list_reinserted",
    ]) {
      await sql`drop trigger if exists ${sql.id(trigger)}`.execute(trx);
    }
    await sql`alter table licenses drop column active_machine_ids`.execute(trx);
  });
}
