"""Stop word lists per 2-letter language code (casefolded, frozen)."""

from collections.abc import Mapping
from types import MappingProxyType

_EN = """
a about above after again against all am an and any are aren't as at be because been
before being below between both but by can can't cannot could couldn't did didn't do
does doesn't doing don don't down during each few for from further had hadn't has hasn't
have haven't having he he'd he'll he's her here here's hers herself him himself his how
how's i i'd i'll i'm i've if in into is isn't it it's its itself just let's ll me more
most mustn't my myself no nor not now of off on once only or other ought our ours
ourselves out over own re s same shan't she she'd she'll she's should shouldn't so some
such t than that that's the their theirs them themselves then there there's these they
they'd they'll they're they've this those through to too under until up upon us ve very
was wasn't we we'd we'll we're we've were weren't what what's when when's where where's
which while who who's whom why why's will with won't would wouldn't you you'd you'll
you're you've your yours yourself yourselves
"""

_DE = """
aber alle allem allen aller alles als also am an ander andere anderem anderen anderer
anderes auch auf aus bei bin bis bist da damit dann das dass daß dein deine dem den denn
der des dich die dies diese diesem diesen dieser dieses dir doch dort du durch ein eine
einem einen einer eines er es etwas euch euer eure für gegen hab habe haben hat hatte
hatten hier hin hinter ich ihm ihn ihnen ihr ihre ihrem ihren ihrer im in ist ja jede
jedem jeden jeder jedes jener kein keine man mein meine mich mir mit muss nach nicht
nichts noch nun nur ob oder ohne sehr sein seine sich sie sind so solche soll sondern um
und uns unser unter viel vom von vor war waren warst was weil welche wenn werde werden
wie wieder will wir wird wo wollen zu zum zur zwar zwischen über
"""

_FR = """
a ai aie au aux avec avez avons c ce ces cet cette d dans de des du elle elles en es est
et été eu il ils j je l la le les leur leurs lui m ma mais me mes moi mon même n ne nos
notre nous on ont ou où par pas pour qu que qui s sa sans se ses si son sont sur ta te
tes toi ton tu un une vos votre vous y à ça ô
"""

_ES = """
a al algo algunas algunos ante antes como con contra cual cuando de del desde donde
durante e el ella ellas ellos en entre era es esa esas ese eso esos esta estaba estas
este esto estos está fue fueron ha han hasta hay la las le les lo los mas me mi mis
mucho muy más mí nada ni no nos nosotros o os otra otros para pero poco por porque que
quien se sea ser si sin sobre su sus también tanto te tiene tu tus tú un una uno unos y
ya yo él
"""

_IT = """
a ad agli ai al alla alle allo anche c che chi ci come con contro da dagli dai dal dalla
dalle dallo degli dei del della delle dello di dove e ed era gli ha hanno ho i il in io
la le lei li lo loro lui ma mi mia mio ne negli nei nel nella nelle nello noi non nostro
o per perché più quale quando quella quello questa questo se si sia siamo sono su sua
sue sui sul sulla suo tra tu tutti tutto un una uno vi voi è
"""

_PT = """
a ao aos as até com como da das de dela dele deles depois do dos e ela elas ele eles em
entre era essa esse esta este está eu foi for foram há isso isto já lhe lhes mais mas me
mesmo meu minha muito na nas nem no nos nossa nosso não num numa o os ou para pela pelas
pelo pelos por qual quando que quem se sem ser seu seus sua suas são só também te tem
teu tu um uma você à às é
"""

_NL = """
aan al alles als altijd andere ben bij daar dan dat de der deze die dit doch doen door
dus een eens en er ge geen geweest haar had heb hebben heeft hem het hier hij hoe hun
iemand iets ik in is ja je kan kon kunnen maar me meer men met mij mijn moet na naar
niet niets nog nu of om omdat onder ons ook op over reeds te tegen toch toen tot u uit
uw van veel voor want waren was wat werd wezen wie wil worden wordt zal ze zelf zich zij
zijn zo zonder zou
"""


def _words(block: str) -> frozenset[str]:
    return frozenset(word.casefold() for word in block.split())


STOP_WORDS: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        "en": _words(_EN),
        "de": _words(_DE),
        "fr": _words(_FR),
        "es": _words(_ES),
        "it": _words(_IT),
        "pt": _words(_PT),
        "nl": _words(_NL),
    }
)

_NONE: frozenset[str] = frozenset()


def stop_words(language: str) -> frozenset[str]:
    """The stop words for a language code; empty for languages without a list."""
    return STOP_WORDS.get(language.lower(), _NONE)
