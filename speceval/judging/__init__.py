"""Judging: versioned prompt templates (`prompts`) and parsers returning typed verdicts (`verdicts`)."""

from speceval.judging.prompts import (
    TemplateId,
    new_salt,
    render_compliance,
    render_ranking,
    split_shared_prefix,
)
from speceval.judging.verdicts import (
    ComplianceVerdict,
    LikertVerdict,
    RankingVerdict,
    Unparsed,
    parse_compliance,
    parse_likert,
    parse_ranking,
)

__all__ = [
    "ComplianceVerdict",
    "LikertVerdict",
    "RankingVerdict",
    "TemplateId",
    "Unparsed",
    "new_salt",
    "parse_compliance",
    "parse_likert",
    "parse_ranking",
    "render_compliance",
    "render_ranking",
    "split_shared_prefix",
]
