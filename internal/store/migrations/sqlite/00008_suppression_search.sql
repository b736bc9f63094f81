-- +goose Up
-- Substring search of suppression lists: a trigram full-text index, so a
-- search of three or more characters does not scan the list (a
-- leading-wildcard LIKE cannot use a B-tree). PostgreSQL has pg_trgm.
CREATE VIRTUAL TABLE suppressions_fts USING fts5(recipient, content='suppressions', content_rowid='id', tokenize='trigram');
INSERT INTO suppressions_fts(suppressions_fts) VALUES ('rebuild');

-- +goose StatementBegin
CREATE TRIGGER suppressions_fts_insert AFTER INSERT ON suppressions BEGIN
    INSERT INTO suppressions_fts (rowid, recipient) VALUES (new.id, new.recipient);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER suppressions_fts_delete AFTER DELETE ON suppressions BEGIN
    INSERT INTO suppressions_fts (suppressions_fts, rowid, recipient) VALUES ('delete', old.id, old.recipient);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER suppressions_fts_update AFTER UPDATE OF recipient ON suppressions BEGIN
    INSERT INTO suppressions_fts (suppressions_fts, rowid, recipient) VALUES ('delete', old.id, old.recipient);
    INSERT INTO suppressions_fts (rowid, recipient) VALUES (new.id, new.recipient);
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER suppressions_fts_update;
DROP TRIGGER suppressions_fts_delete;
DROP TRIGGER suppressions_fts_insert;
DROP TABLE suppressions_fts;
