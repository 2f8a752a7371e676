//! Feed dates in other languages: RFC 822 dates written with the publisher's own day and
//! month names (`mer., 16 nov. 2022 10:00:00 +0100`, `Mi, 16 Nov 2022`, `16 de noviembre de
//! 2022`), read by naming the month in English and leaving out the day's name. Only a date
//! [`crate::date::parse`] cannot read is translated, so an English date is never touched.

use chrono::{DateTime, Utc};

/// A word of a date in another language: a month (1–12), or a word that is left out (a
/// day's name, `de`).
#[derive(Clone, Copy)]
enum Word {
    Month(u8),
    Day,
    Filler,
}

use Word::{Day, Filler, Month};

/// Day and month names and abbreviations (lowercase) of French, German, Spanish, Italian,
/// Portuguese, Dutch, the Scandinavian languages, Polish, Russian and Greek.
#[rustfmt::skip]
const WORDS: &[(&str, Word)] = &[
    // French.
    ("lundi", Day), ("lun", Day), ("mardi", Day), ("mercredi", Day), ("mer", Day),
    ("jeudi", Day), ("jeu", Day), ("vendredi", Day), ("ven", Day), ("samedi", Day),
    ("sam", Day), ("dimanche", Day), ("dim", Day),
    ("janvier", Month(1)), ("janv", Month(1)), ("février", Month(2)), ("fevrier", Month(2)),
    ("févr", Month(2)), ("fevr", Month(2)), ("fév", Month(2)), ("fev", Month(2)),
    ("mars", Month(3)), ("avril", Month(4)), ("avr", Month(4)), ("mai", Month(5)),
    ("juin", Month(6)), ("juillet", Month(7)), ("juil", Month(7)), ("août", Month(8)),
    ("aout", Month(8)), ("aoû", Month(8)), ("septembre", Month(9)), ("octobre", Month(10)),
    ("novembre", Month(11)), ("décembre", Month(12)), ("decembre", Month(12)),
    ("déc", Month(12)),
    // German.
    ("montag", Day), ("mo", Day), ("dienstag", Day), ("di", Day), ("mittwoch", Day),
    ("mi", Day), ("donnerstag", Day), ("do", Day), ("freitag", Day), ("fr", Day),
    ("samstag", Day), ("sa", Day), ("sonnabend", Day), ("sonntag", Day), ("so", Day),
    ("januar", Month(1)), ("jänner", Month(1)), ("jän", Month(1)), ("februar", Month(2)),
    ("märz", Month(3)), ("mär", Month(3)), ("mrz", Month(3)), ("juni", Month(6)),
    ("juli", Month(7)), ("oktober", Month(10)), ("okt", Month(10)), ("dezember", Month(12)),
    ("dez", Month(12)),
    // Spanish.
    ("lunes", Day), ("martes", Day), ("miércoles", Day), ("miercoles", Day), ("mié", Day),
    ("mie", Day), ("jueves", Day), ("jue", Day), ("viernes", Day), ("vie", Day),
    ("sábado", Day), ("sabado", Day), ("sáb", Day), ("sab", Day), ("domingo", Day),
    ("dom", Day),
    ("enero", Month(1)), ("ene", Month(1)), ("febrero", Month(2)), ("marzo", Month(3)),
    ("abril", Month(4)), ("abr", Month(4)), ("mayo", Month(5)), ("junio", Month(6)),
    ("julio", Month(7)), ("agosto", Month(8)), ("ago", Month(8)), ("septiembre", Month(9)),
    ("setiembre", Month(9)), ("set", Month(9)), ("octubre", Month(10)),
    ("noviembre", Month(11)), ("diciembre", Month(12)), ("dic", Month(12)),
    // Italian.
    ("lunedì", Day), ("lunedi", Day), ("martedì", Day), ("martedi", Day), ("mercoledì", Day),
    ("mercoledi", Day), ("giovedì", Day), ("giovedi", Day), ("gio", Day), ("venerdì", Day),
    ("venerdi", Day), ("sabato", Day), ("domenica", Day),
    ("gennaio", Month(1)), ("gen", Month(1)), ("febbraio", Month(2)), ("aprile", Month(4)),
    ("maggio", Month(5)), ("mag", Month(5)), ("giugno", Month(6)), ("giu", Month(6)),
    ("luglio", Month(7)), ("lug", Month(7)), ("settembre", Month(9)), ("ottobre", Month(10)),
    ("ott", Month(10)), ("dicembre", Month(12)),
    // Portuguese.
    ("segunda", Day), ("seg", Day), ("terça", Day), ("terca", Day), ("ter", Day),
    ("quarta", Day), ("qua", Day), ("quinta", Day), ("qui", Day), ("sexta", Day),
    ("sex", Day), ("feira", Filler),
    ("janeiro", Month(1)), ("fevereiro", Month(2)), ("março", Month(3)), ("marco", Month(3)),
    ("maio", Month(5)), ("junho", Month(6)), ("julho", Month(7)), ("setembro", Month(9)),
    ("outubro", Month(10)), ("out", Month(10)), ("novembro", Month(11)),
    ("dezembro", Month(12)),
    // Dutch.
    ("maandag", Day), ("ma", Day), ("dinsdag", Day), ("woensdag", Day), ("wo", Day),
    ("donderdag", Day), ("vrijdag", Day), ("vr", Day), ("zaterdag", Day), ("za", Day),
    ("zondag", Day), ("zo", Day),
    ("januari", Month(1)), ("februari", Month(2)), ("maart", Month(3)), ("mrt", Month(3)),
    ("mei", Month(5)), ("augustus", Month(8)),
    // Swedish, Danish, Norwegian.
    ("måndag", Day), ("mån", Day), ("mandag", Day), ("tisdag", Day), ("tis", Day),
    ("tirsdag", Day), ("tir", Day), ("onsdag", Day), ("ons", Day), ("torsdag", Day),
    ("tor", Day), ("tors", Day), ("fredag", Day), ("fre", Day), ("lördag", Day),
    ("lör", Day), ("lørdag", Day), ("lør", Day), ("söndag", Day), ("sön", Day),
    ("søndag", Day), ("søn", Day),
    ("marts", Month(3)), ("maj", Month(5)), ("augusti", Month(8)), ("desember", Month(12)),
    ("des", Month(12)),
    // Polish (the month's name and its genitive).
    ("poniedziałek", Day), ("pon", Day), ("wtorek", Day), ("wt", Day), ("środa", Day),
    ("śr", Day), ("czwartek", Day), ("czw", Day), ("piątek", Day), ("pt", Day),
    ("sobota", Day), ("sob", Day), ("niedziela", Day), ("niedz", Day),
    ("styczeń", Month(1)), ("stycznia", Month(1)), ("sty", Month(1)), ("luty", Month(2)),
    ("lutego", Month(2)), ("lut", Month(2)), ("marzec", Month(3)), ("marca", Month(3)),
    ("kwiecień", Month(4)), ("kwietnia", Month(4)), ("kwi", Month(4)), ("maja", Month(5)),
    ("czerwiec", Month(6)), ("czerwca", Month(6)), ("cze", Month(6)), ("lipiec", Month(7)),
    ("lipca", Month(7)), ("lip", Month(7)), ("sierpień", Month(8)), ("sierpnia", Month(8)),
    ("sie", Month(8)), ("wrzesień", Month(9)), ("września", Month(9)), ("wrz", Month(9)),
    ("październik", Month(10)), ("października", Month(10)), ("paź", Month(10)),
    ("listopad", Month(11)), ("listopada", Month(11)), ("lis", Month(11)),
    ("grudzień", Month(12)), ("grudnia", Month(12)), ("gru", Month(12)),
    // Russian (the month's name and its genitive).
    ("понедельник", Day), ("пн", Day), ("вторник", Day), ("вт", Day), ("среда", Day),
    ("ср", Day), ("четверг", Day), ("чт", Day), ("пятница", Day), ("пт", Day),
    ("суббота", Day), ("сб", Day), ("воскресенье", Day), ("вс", Day),
    ("январь", Month(1)), ("января", Month(1)), ("янв", Month(1)), ("февраль", Month(2)),
    ("февраля", Month(2)), ("фев", Month(2)), ("март", Month(3)), ("марта", Month(3)),
    ("мар", Month(3)), ("апрель", Month(4)), ("апреля", Month(4)), ("апр", Month(4)),
    ("май", Month(5)), ("мая", Month(5)), ("июнь", Month(6)), ("июня", Month(6)),
    ("июн", Month(6)), ("июль", Month(7)), ("июля", Month(7)), ("июл", Month(7)),
    ("август", Month(8)), ("августа", Month(8)), ("авг", Month(8)), ("сентябрь", Month(9)),
    ("сентября", Month(9)), ("сен", Month(9)), ("сент", Month(9)), ("октябрь", Month(10)),
    ("октября", Month(10)), ("окт", Month(10)), ("ноябрь", Month(11)), ("ноября", Month(11)),
    ("ноя", Month(11)), ("декабрь", Month(12)), ("декабря", Month(12)), ("дек", Month(12)),
    ("г", Filler), ("года", Filler),
    // Greek.
    ("κυρ", Day), ("δευ", Day), ("τρι", Day), ("τετ", Day), ("πεμ", Day), ("παρ", Day),
    ("σαβ", Day),
    ("ιαν", Month(1)), ("φεβ", Month(2)), ("μάώ", Month(3)), ("μαρ", Month(3)),
    ("μάρ", Month(3)), ("απρ", Month(4)), ("μάι", Month(5)), ("μαι", Month(5)),
    ("μαϊ", Month(5)), ("ιούν", Month(6)), ("ιουν", Month(6)), ("ιον", Month(6)),
    ("ιούλ", Month(7)), ("ιουλ", Month(7)), ("ιολ", Month(7)), ("αύγ", Month(8)),
    ("αυγ", Month(8)), ("σεπ", Month(9)), ("οκτ", Month(10)), ("νοέ", Month(11)),
    ("νοε", Month(11)), ("δεκ", Month(12)),
    // Words between the parts.
    ("de", Filler), ("del", Filler), ("à", Filler), ("às", Filler), ("um", Filler),
    ("om", Filler), ("kl", Filler), ("klo", Filler), ("alle", Filler), ("ore", Filler),
    ("le", Filler), ("den", Filler), ("el", Filler),
];

/// Names that are a day in one language and a month in another (`mar`: mardi, marzo):
/// a month once a number has been read, a day before.
const EITHER: &[(&str, u8)] = &[("mar", 3)];

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// The longest date text read (a date is short; a body in a date element is not one).
const MAX_LEN: usize = 100;

/// Parses a feed date, in English or in another language; `None` when it cannot be read.
pub(super) fn parse(s: &str) -> Option<DateTime<Utc>> {
    crate::date::parse(s).or_else(|| crate::date::parse(&translate(s)?))
}

/// `s` with its day and month names in English terms (a month as `Nov`, a day's name left
/// out); `None` when it names none of them.
fn translate(s: &str) -> Option<String> {
    if s.len() > MAX_LEN {
        return None;
    }
    let mut out = String::with_capacity(s.len());
    let mut changed = false;
    let mut seen_number = false;
    let mut rest = s.trim();
    while let Some(c) = rest.chars().next() {
        if !c.is_alphabetic() {
            seen_number |= c.is_ascii_digit();
            out.push(c);
            rest = &rest[c.len_utf8()..];
            continue;
        }
        let end = rest
            .find(|c: char| !c.is_alphabetic())
            .unwrap_or(rest.len());
        let (run, after) = rest.split_at(end);
        rest = after;
        let lower = run.to_lowercase();
        let either = EITHER.iter().find(|(w, _)| *w == lower).map(|(_, m)| *m);
        let word = WORDS.iter().find(|(w, _)| *w == lower).map(|(_, w)| *w);
        let month = match (either, word) {
            (Some(m), _) if seen_number => Some(m),
            (Some(_), _) => None,
            (None, Some(Month(m))) => Some(m),
            (None, Some(Day | Filler)) => None,
            (None, None) => {
                out.push_str(run);
                continue;
            }
        };
        changed = true;
        if let Some(m) = month {
            out.push_str(MONTHS[usize::from(m) - 1]);
        }
        // A day's name takes its comma and the dot of its abbreviation with it.
        if month.is_none() || rest.starts_with('.') {
            rest = rest.trim_start_matches(['.', ',']);
        }
    }
    changed.then(|| collapse(&out))
}

/// Spaces collapsed and the ends trimmed.
fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Option<String> {
        parse(s).map(|t| crate::date::format(&t))
    }

    #[test]
    fn issue_40_dates_with_day_and_month_names_of_other_languages_are_read() {
        let want = Some("2022-11-16T09:00:00Z".to_owned());
        for s in [
            "mer, 16 nov 2022 10:00:00 +0100",
            "mer., 16 nov. 2022 10:00:00 +0100",
            "Mi, 16 Nov 2022 10:00:00 +0100",
            "Mittwoch, 16. November 2022 10:00:00 +0100",
            "mié, 16 nov 2022 10:00:00 +0100",
            "miércoles, 16 de noviembre de 2022 10:00:00 +0100",
            "mercoledì, 16 novembre 2022 10:00:00 +0100",
            "qua, 16 nov 2022 10:00:00 +0100",
            "wo, 16 nov 2022 10:00:00 +0100",
            "ons, 16 nov 2022 10:00:00 +0100",
            "śr, 16 lis 2022 10:00:00 +0100",
            "ср, 16 ноя 2022 10:00:00 +0100",
            "Τετ, 16 Νοέ 2022 10:00:00 +0100",
        ] {
            assert_eq!(p(s), want, "{s}");
        }
        // `mar` is Tuesday in French and March in Spanish: the place says which.
        assert_eq!(
            p("mar, 15 mar 2022 10:00:00 GMT").as_deref(),
            Some("2022-03-15T10:00:00Z")
        );
        assert_eq!(
            p("sáb, 3 dic 2022 08:00:00 GMT").as_deref(),
            Some("2022-12-03T08:00:00Z")
        );
        assert_eq!(
            p("16 août 2022 10:00 +0000").as_deref(),
            Some("2022-08-16T10:00:00Z")
        );
    }

    #[test]
    fn what_names_nothing_stays_unread() {
        for s in ["blah, 16 blah 2022", "", "mer", "16 xyz 2022 10:00:00 GMT"] {
            assert_eq!(p(s), None, "{s}");
        }
        assert_eq!(translate(&"a".repeat(200)), None);
    }
}
