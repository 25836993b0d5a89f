"""A vm's fields as a spec, the quick form and `--environment` write them, checked before anything boots."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from benchlab.errors import SpecError
from benchlab.spec.models import BalloonSpec, EnvironmentSpec, VariantSpec
from benchlab.spec.quick import parse_environment, parse_variant


@pytest.mark.parametrize(
    ("written", "reporting", "target"),
    [("reporting", True, None), ("768M", False, 768 << 20), ({"reporting": True, "target": "1G"}, True, 1 << 30)],
)
def test_a_balloon_is_written_as_text_or_a_table(written: object, reporting: bool, target: int | None) -> None:
    spec = EnvironmentSpec.model_validate({"kind": "vm", "memory": "2G", "balloon": written})
    assert spec.balloon == BalloonSpec(reporting=reporting, target=target)


def test_no_balloon_is_none() -> None:
    assert EnvironmentSpec.model_validate({"kind": "vm", "balloon": "none"}).balloon is None


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"kind": "vm", "balloon": "1G"}, "a balloon's target must be below the vm's memory"),  # the default is 1 GiB
        ({"kind": "vm", "memory": "2G", "balloon": "2G"}, "below the vm's memory"),
        ({"kind": "vm", "balloon": "lots"}, "is not a size such as 512M or 2G"),
        ({"kind": "container", "balloon": "reporting"}, "apply to a vm environment"),
        ({"kind": "vm", "balloon": {"reporting": "yes"}}, "valid boolean"),
        ({"kind": "vm", "swap": ["zram0"]}, "should match pattern"),  # a device's path
        ({"kind": "vm", "disk": "1M"}, "greater than or equal to 16777216"),
        ({"kind": "vm", "kvm_boot_timeout": 0}, "greater than or equal to 1"),
        ({"kind": "local", "disk": "1G"}, "apply to a vm environment"),
    ],
)
def test_vm_fields_that_cannot_be_are_refused(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        EnvironmentSpec.model_validate(fields)


def test_the_quick_form_sets_a_vms_fields_in_any_order() -> None:
    variant = parse_variant(
        "g: environment.memory=2G environment=vm environment.cpus=1 environment.modules=zram,binder_linux "
        "environment.knobs./sys/kernel/mm/lru_gen/enabled=y environment.fresh=true environment.balloon=reporting"
    )
    env = VariantSpec.model_validate(variant).environment
    assert (env.kind, env.memory, env.cpus, env.modules, env.fresh) == ("vm", 2 << 30, 1, ["zram", "binder_linux"], True)
    assert env.knobs == {"/sys/kernel/mm/lru_gen/enabled": "y"} and env.balloon == BalloonSpec(reporting=True)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("g: environment=vm environment.bogus=1", "unknown environment field 'bogus'"),
        ("g: environment=ssh://lab environment.memory=1G", "not a table to set"),
        ("g: environment.memory=1G environment=ssh://lab", "takes no environment.FIELD"),
    ],
)
def test_a_quick_form_field_no_environment_has_is_refused(text: str, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        parse_variant(text)


def test_the_environment_option_is_a_kind_then_its_fields() -> None:
    env = parse_environment("vm kernel=6.1.0-56 memory=2G cpus=1 accel=tcg")
    assert (env.kind, env.kernel, env.memory, env.cpus, env.accel) == ("vm", "6.1.0-56", 2 << 30, 1, "tcg")
    assert parse_environment("local").kind == "local"
    with pytest.raises(SpecError, match="--environment 'vm memory=2Q': '2Q' is not a size"):
        parse_environment("vm memory=2Q")
