//! Stop-word lists (pipeline: inside [`crate::features`]), one per supported
//! language, after the Snowball project's lists (shortened to the most
//! frequent function words). They serve two purposes: stop-word removal
//! before hashing, and the cheap stop-word-ratio language detector.
//! Lists are lower-case; tokens are case-folded before lookup.

/// (ISO 639-1 code, space-separated stop words).
pub(crate) const LISTS: &[(&str, &str)] = &[
    ("en", "a about above after again against all am an and any are aren't as at be because been before being below \
        between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down during each few \
        for from further had hadn't has hasn't have haven't having he he'd he'll he's her here here's hers herself him \
        himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself let's me more most mustn't my \
        myself no nor not of off on once only or other ought our ours ourselves out over own same shan't she she'd \
        she'll she's should shouldn't so some such than that that's the their theirs them themselves then there there's \
        these they they'd they'll they're they've this those through to too under until up very was wasn't we we'd \
        we'll we're we've were weren't what what's when when's where where's which while who who's whom why why's with \
        won't would wouldn't you you'd you'll you're you've your yours yourself yourselves will just also may"),
    ("de", "aber alle allem allen aller alles als also am an ander andere anderem anderen anderer anderes auch auf aus \
        bei bin bis bist da damit dann das dass daß dein deine dem den denn der des dich die dies diese diesem diesen \
        dieser dieses dir doch dort du durch ein eine einem einen einer eines er es etwas euch euer eure für hat hatte \
        hier hin hinter ich ihm ihn ihnen ihr ihre im in ist ja jede jedem jeden jeder jedes kann kein keine man mich \
        mir mit muss nach nicht nichts noch nun nur ob oder ohne sehr sein seine sich sie sind so solche soll sondern \
        um und uns unser unter viel vom von vor war waren warst was weil welche wenn werden wie wieder will wir wird \
        wo zu zum zur über"),
    ("fr", "au aux avec ce ces dans de des du elle en et eux il ils je la le les leur lui ma mais me même mes moi mon \
        ne nos notre nous on ou par pas pour qu que qui sa se ses son sur ta te tes toi ton tu un une vos votre vous \
        c d j l à m n s t y été étée étés est sont était ont avait cette cet plus comme tout fait être avoir"),
    ("es", "de la que el en y a los del se las por un para con no una su al lo como más pero sus le ya o este sí \
        porque esta entre cuando muy sin sobre también me hasta hay donde quien desde todo nos durante todos uno les \
        ni contra otros ese eso ante ellos e esto mí antes algunos qué unos yo otro otras otra él tanto esa estos mucho \
        quienes nada muchos cual poco ella estar estas algunas algo nosotros es son fue ser ha"),
    ("it", "ad al allo ai agli all agl alla alle con col coi da dal dallo dai dagli dall dagl dalla dalle di del dello \
        dei degli dell degl della delle in nel nello nei negli nell negl nella nelle su sul sullo sui sugli sull sugl \
        sulla sulle per tra contro io tu lui lei noi voi loro mio mia miei mie tuo tua tuoi tue suo sua suoi sue il \
        lo la le gli un uno una ma ed se perché anche come dov dove che chi cui non più quale quanto quanti quanta \
        quante quello quelli quella quelle questo questi questa queste si tutto tutti a c e i l o ha è sono era"),
    ("nl", "de en van ik te dat die in een hij het niet zijn is was op aan met als voor had er maar om hem dan zou of \
        wat mijn men dit zo door over ze zich bij ook tot je mij uit der daar haar naar heb hoe heeft hebben deze u \
        want nog zal me zij nu ge geen omdat iets worden toch al waren veel meer doen toen moet ben zonder kan hun \
        dus alles onder ja eens hier wie werd altijd doch wordt wezen kunnen ons zelf tegen na reeds wil kon niets uw"),
    ("pt", "de a o que e do da em um para com não uma os no se na por mais as dos como mas ao ele das à seu sua ou \
        quando muito nos já eu também só pelo pela até isso ela entre depois sem mesmo aos seus quem nas me esse \
        eles você essa num nem suas meu às minha numa pelos elas qual nós lhe deles essas esses pelas este dele tu \
        te vocês vos lhes meus minhas teu tua nossa nosso é foi ser são está"),
    ("sv", "och det att i en jag hon som han på den med var sig för så till är men ett om hade de av icke mig du \
        henne då sin nu har inte hans honom skulle hennes där min man ej vid kunde något från ut när efter upp vi \
        dem vara vad över än dig kan sina här ha mot alla under någon eller allt mycket sedan ju denna själv detta \
        åt utan varit hur ingen mitt ni bli blev oss din dessa några deras blir mina samma vilken er sådan vår"),
    ("da", "og i jeg det at en den til er som på de med han af for ikke der var mig sig men et har om vi min havde \
        ham hun nu over da fra du ud sin dem os op man hans hvor eller hvad skal selv her alle vil blev kunne ind \
        når være dog noget ville jo deres efter ned skulle denne end dette mit også under have dig anden hende mine \
        alt meget sit sine vor mod disse hvis din nogle hos blive mange ad bliver hendes været thi jer sådan"),
    ("no", "og i jeg det at en et den til er som på de med han av ikke der så var meg seg men ett har om vi min \
        mitt ha hadde hun nå over da ved fra du ut sin dem oss opp man kan hans hvor eller hva skal selv sjøl her \
        alle vil bli ble blitt kunne inn når være kom noen noe ville dere deres kun ja etter ned skulle denne for \
        deg si sine sitt mot å meget hvorfor dette disse uten hvordan ingen din ditt blir samme hvilken"),
    ("fi", "olla olen olet on olemme olette ovat ole oli olisi olisit olisin olisimme olisitte olisivat olit olin \
        olimme olitte olivat ollut olleet en et ei emme ette eivät minä sinä hän me te he tämä tuo se nämä nuo ne \
        kuka mikä mitkä joka jotka että ja jos koska kuin mutta niin sekä sillä tai vaan vai vaikka kanssa mukaan \
        noin poikki yli kun niin nyt itse"),
    ("ru", "и в во не что он на я с со как а то все она так его но да ты к у же вы за бы по только ее мне было вот \
        от меня еще нет о из ему теперь когда даже ну вдруг ли если уже или ни быть был него до вас нибудь опять \
        уж вам ведь там потом себя ничего ей может они тут где есть надо ней для мы тебя их чем была сам чтоб без \
        будто чего раз тоже себе под будет ж тогда кто этот того потому этого какой совсем ним здесь этом один \
        почти мой тем чтобы нее сейчас были куда зачем всех никогда можно при наконец два об другой хоть после \
        над больше тот через эти нас про всего них какая много разве три эту моя впрочем хорошо свою этой перед \
        иногда лучше чуть том нельзя такой им более всегда конечно всю между это"),
    ("hu", "a az egy be ki le fel meg el át rá ide oda szét össze vissza de hát és vagy hogy van lesz volt csak nem \
        igen mint én te ő mi ti ők ön is ha már még sem majd után alatt között mert pedig amely ami aki ahol azt ezt \
        ez az azok ezek nincs minden"),
    ("ro", "a acea aceasta această aceea acei aceia acel acela acele acelea acest acesta aceste acestea acestei \
        acestia acestui acolo acum ai aia al ale alt alta altceva alte altfel am ar are as asta atunci au avea avem \
        aveţi avut azi ca care ce cei ceva cine cu cum da dar de deci din după e ea ei el ele era este eu fi fost \
        iar il în la le li lor lui mai mult ne nici noi nu o or pe pentru prin sa sau se si şi și sunt să te tu un \
        una unei unui va vor"),
    ("tr", "acaba ama aslında az bazı belki biri birkaç birşey biz bu çok çünkü da daha de defa diye eğer en gibi \
        hem hep hepsi her hiç için ile ise kez ki kim mı mu mü nasıl ne neden nerde nerede nereye niçin niye o \
        sanki şey siz şu tüm ve veya ya yani bir olan olarak"),
    ("el", "ο η το οι τα του της των τον την και κι κ ειμαι εισαι ειναι ειμαστε ειστε στο στον στη στην μα αλλα \
        απο για προς με σε ως παρα αντι κατα μετα θα να δε δεν μη μην επι ενω εαν αν τοτε που πως ποιος ποια ποιο \
        ποιοι ποιες ποιων ποιους αυτος αυτη αυτο αυτοι αυτων αυτους αυτες αυτα εκεινος εκεινη εκεινο ενα μια"),
    ("ar", "في من على إلى عن مع هذا هذه ذلك التي الذي الذين كان كانت قد لا ما لم لن أن إن أو ثم هو هي هم نحن أنا \
        كل بعض عند بين حتى إذا"),
    ("ta", "ஒரு என்று மற்றும் இந்த இது என்ற கொண்டு என்பது பல ஆகும் அல்லது அவர் நான் உள்ள அந்த இவர் என முதல் என்ன இருந்து"),
];
