-- payhook: adds the indexes payhook-dispatch uses to hand lifecycle changes
-- on (payment_event_changes, from db/migrate-6-lifecycle-changes.sql).
--
--     mariadb DBNAME < db/migrate-7-lifecycle-handoff.sql
--
-- Without them the hand-off works, only slower on a long history: a change
-- goes only after its payment was handed on and after every earlier change
-- of its object, and ix_payment_event_changes_object_state answers "has
-- this object an earlier change not handed on yet?" and "which changes of
-- this object wait?" from the index alone; ix_payment_event_changes_state
-- keeps counting the dead ones (the metrics, --list-dead) cheap, as
-- ix_payments_dispatch_state does for payments. Both are built online
-- (InnoDB); payhook's workers keep running.

ALTER TABLE payment_event_changes
    ADD KEY ix_payment_event_changes_object_state (event_row_id,
                                                   dispatch_state),
    ADD KEY ix_payment_event_changes_state (dispatch_state);
