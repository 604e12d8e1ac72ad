//! The whisper vocabulary: the phrases (Chinese and English) that name
//! each maneuver, and the longest-alias-wins match the parser and the
//! operator hint use.

use super::Maneuver;
use super::text::{is_space, lower_for_aliases, py_strip};
use std::sync::OnceLock;

/// The whisper vocabulary: for each maneuver, the phrases that name it.
pub const CHOICES: [(Maneuver, &[&str]); 10] = [
    (
        Maneuver::Assault,
        &[
            "全军突击",
            "全军压上",
            "集中火力",
            "火力集中",
            "压上去",
            "压上",
            "全歼",
            "出击",
            "总攻",
            "突击",
            "冲锋",
            "进攻",
            "冲啊",
            "冲过去",
            "打过去",
            "打他",
            "歼灭",
            "assault",
            "attack",
            "charge",
            "advance",
            "push",
        ],
    ),
    (
        Maneuver::FlankLeft,
        &[
            "左翼包围后集中火力",
            "左翼包抄",
            "包抄左翼",
            "左翼包围",
            "从左边",
            "左路",
            "左翼",
            "左侧",
            "flank left",
            "left flank",
        ],
    ),
    (
        Maneuver::FlankRight,
        &[
            "右翼包围后集中火力",
            "右翼包抄",
            "包抄右翼",
            "右翼包围",
            "从右边",
            "右路",
            "右翼",
            "右侧",
            "flank right",
            "right flank",
        ],
    ),
    (
        Maneuver::Retreat,
        &[
            "撤退",
            "后撤",
            "退守",
            "拉回来",
            "撤回来",
            "退回来",
            "收缩",
            "retreat",
            "fall back",
            "withdraw",
        ],
    ),
    (
        Maneuver::Defend,
        &[
            "固守",
            "守住",
            "龟缩",
            "守家",
            "防守",
            "防御",
            "坚守",
            "卡住",
            "defend",
            "hold position",
            "hold the line",
        ],
    ),
    (
        Maneuver::Surround,
        &[
            "包围",
            "合围",
            "围歼",
            "围杀",
            "包饺子",
            "surround",
            "encircle",
        ],
    ),
    (
        Maneuver::Hold,
        &[
            "原地不动",
            "别动",
            "停止前进",
            "停火",
            "停止",
            "原地待命",
            "hold fire",
            "hold",
            "stop",
            "standby",
        ],
    ),
    (
        Maneuver::MoveTo,
        &[
            "沿途不停留",
            "移动到坐标",
            "前往坐标",
            "开到坐标",
            "驶向坐标",
            "move to coordinate",
            "move to",
            "go to",
            "proceed to",
        ],
    ),
    (
        Maneuver::Patrol,
        &[
            "来回巡逻",
            "往返巡逻",
            "区间巡逻",
            "巡逻",
            "patrol between",
            "patrol from",
            "patrol",
        ],
    ),
    (
        Maneuver::AttackUnit,
        &[
            "对着目标冲过去开火",
            "冲过去开火",
            "冲向目标",
            "追击目标",
            "追击",
            "攻击",
            "攻打",
            "attack target tank",
            "attack unit",
            "attack tank",
            "chase target",
            "chase",
        ],
    ),
];

/// Every alias, longest first (ties in table order).
fn aliases() -> &'static [(&'static str, Maneuver)] {
    static SORTED: OnceLock<Vec<(&'static str, Maneuver)>> = OnceLock::new();
    SORTED.get_or_init(|| {
        let mut all: Vec<(&'static str, Maneuver)> = CHOICES
            .iter()
            .flat_map(|(m, words)| words.iter().map(move |w| (*w, *m)))
            .collect();
        all.sort_by_key(|(w, _)| std::cmp::Reverse(w.chars().count()));
        all
    })
}

/// The maneuver whose longest alias occurs in `text` (case and runs of
/// white space ignored).
pub fn match_maneuver(text: &str) -> Option<Maneuver> {
    let lowered = lower_for_aliases(py_strip(text));
    let mut normalized = String::with_capacity(lowered.len());
    let mut in_space = false;
    for c in lowered.chars() {
        if is_space(c) {
            if !in_space {
                normalized.push(' ');
            }
            in_space = true;
        } else {
            normalized.push(c);
            in_space = false;
        }
    }
    aliases()
        .iter()
        .find(|(alias, _)| normalized.contains(alias))
        .map(|(_, m)| *m)
}

/// The maneuver an operator's free-text hint names: the longest alias in
/// the lower-cased text (white space as it is), or none.
pub fn hint_maneuver(hint: &str) -> Option<Maneuver> {
    let lowered = lower_for_aliases(hint);
    aliases()
        .iter()
        .find(|(alias, _)| lowered.contains(alias))
        .map(|(_, m)| *m)
}
