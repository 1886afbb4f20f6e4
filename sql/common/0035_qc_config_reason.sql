-- Why an operator set a station's quality-control configuration (envmon qc set|reset --reason): the
-- change log gives it beside the change.
alter table qc_configs add column reason text;
