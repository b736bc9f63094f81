-- +goose Up
-- What automation rules put in force (package sending's automation, rules
-- from the shaping files) lives in the suspensions table beside the
-- operator's holds, with created_by 'automation': kind 'site' (Suspend),
-- 'tenant' ('ACCOUNT_ID@SITE', SuspendTenant) and 'config' ('KEY@SITE',
-- SetConfig, its override in action). One table means one copy that every
-- process reads each second, one expiry, and one list for the operator.
-- action: 'Suspend', 'SuspendTenant' or 'SetConfig KEY=VALUE'; rule: the
-- rule's id; reply: the reply that set it off. Empty for the operator's.
ALTER TABLE suspensions ADD COLUMN action TEXT NOT NULL DEFAULT '';
ALTER TABLE suspensions ADD COLUMN rule TEXT NOT NULL DEFAULT '';
ALTER TABLE suspensions ADD COLUMN reply TEXT NOT NULL DEFAULT '';
